import Runnel
import Synchronization

/// What one loop of a `LoopGroup` reports to the rest of the process: its open connections,
/// the batches other loops handed it (`CrossLoopMailbox`), and how long its turns take.
///
/// Thread rules: any thread. The counters are atomics each written by the threads that change
/// them; the turn lengths are the loop's own copy, published by the loop at the end of every
/// turn (`LoopIO.sharedTurnLengths`) or read on the loop itself for the first loop.
public final class LoopStatistics: Sendable {
    /// The loop's place in its group: 0 for the first loop.
    public let index: Int
    let openConnections = Atomic<Int>(0)
    let handoffCount = Atomic<Int>(0)
    let turnLengthsCopy = Locked(TurnLengths())

    init(index: Int) { self.index = index }

    /// Connections now served by the loop (their sockets are its).
    public var connections: Int { openConnections.load(ordering: .relaxed) }
    /// Batches of messages other loops have handed the loop.
    public var handoffs: Int { handoffCount.load(ordering: .relaxed) }
    /// The loop's turn lengths as last published (loops other than the first).
    var publishedTurnLengths: TurnLengths { turnLengthsCopy.withLock { $0 } }
}
