import Runnel
import Synchronization

/// What one loop of a `LoopGroup` reports to the rest of the process: its open connections,
/// the batches other loops handed it (`CrossLoopMailbox`), and how long its turns take.
///
/// Thread rules: any thread. The counters are atomics each written by the threads that change
/// them (the recent turn length by the loop alone); the turn lengths, which the loop counts at
/// the end of every turn, are behind a lock.
public final class LoopStatistics: Sendable {
    /// The loop's place in its group: 0 for the first loop.
    public let index: Int
    let openConnections = Atomic<Int>(0)
    let handoffCount = Atomic<Int>(0)
    let turnLengths = Locked(TurnLengths())
    private let recentTurn = Atomic<UInt64>(0)

    init(index: Int) { self.index = index }

    /// Connections now served by the loop (their sockets are its).
    public var connections: Int { openConnections.load(ordering: .relaxed) }
    /// Batches of messages other loops have handed the loop.
    public var handoffs: Int { handoffCount.load(ordering: .relaxed) }
    /// The loop's turn lengths.
    var recordedTurnLengths: TurnLengths { turnLengths.withLock { $0 } }
    /// How long the loop's recent turns worked, in nanoseconds: each turn moves it an eighth of
    /// the way to that turn's length, so a few long turns show and one does not dominate.
    public var recentTurnNanoseconds: UInt64 { recentTurn.load(ordering: .relaxed) }

    /// Counts a turn that worked `nanoseconds`. The loop's thread.
    func record(turn nanoseconds: UInt64) {
        turnLengths.withLock { $0.record(nanoseconds: nanoseconds) }
        let recent = recentTurn.load(ordering: .relaxed)
        let moved = nanoseconds >= recent ? recent + (nanoseconds - recent) / 8 : recent - (recent - nanoseconds) / 8
        recentTurn.store(moved, ordering: .relaxed)
    }
}
