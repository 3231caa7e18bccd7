import CLibUV
import Runnel
import RunnelBytes

/// The loops of one process, each serving the connections placed on it for their whole life
/// (docs/decisions/0011-every-loop-serves-sessions-from-replicas.md): the first, which runs on
/// the caller's thread, and the others, each on a thread of its own. A listener spread over the
/// group (`TCPListener.spread(over:acceptors:)`) has it place each accepted connection
/// (`place`) on the loop with the fewest open connections, the one whose recent turns were
/// shorter among loops with as few (`leastLoaded`): on the first loop the connection
/// goes to that loop's acceptor as it is; for another its socket moves there (a libuv handle
/// belongs to its loop), the sockets a turn places crossing as one batch (`CrossLoopMailbox`),
/// and that loop opens a connection for it and hands it to its own acceptor. Nothing of a
/// connection crosses a thread after that.
///
/// Thread rules: `place` on the first loop's thread; `statistics`, `count`, `schedulers`,
/// `start()` and `shutdown()` from any thread. Lifetime rule: the other loops run from
/// `start()` until `shutdown()`, which the owner calls once the first loop has stopped (their
/// connections closed by then); the mailboxes live as long as the group.
public final class LoopGroup: @unchecked Sendable {
    /// The loop the group's listeners accept on.
    public let first: LoopScheduler
    /// Each loop's scheduler, the first's at index 0: what runs on each (a server per loop) is
    /// made for these before `start()`.
    public let schedulers: [LoopScheduler]
    /// Each loop's figures, the first loop's at index 0.
    public let statistics: [LoopStatistics]
    private let others: [EventLoop]
    /// For each loop but the first (index 0 unused): the sockets placed on it.
    private let placements: [CrossLoopMailbox<PlacedSocket>?]
    /// Where the search for the least loaded loop starts, turned after each placement so ties
    /// go round (first loop thread).
    private var nextCandidate = 0

    /// A group of `count` loops (at least 1) whose first is `first`: makes the others, which
    /// run once `start()` is called.
    public init(first: EventLoop, count: Int) {
        precondition(count >= 1, "a group has at least one loop")
        self.first = first.scheduler
        statistics = (0..<count).map { LoopStatistics(index: $0) }
        first.scheduler.io.sharedStatistics = statistics[0]
        var others: [EventLoop] = []
        var placements: [CrossLoopMailbox<PlacedSocket>?] = [nil]
        for index in 1..<count {
            let loop = EventLoop()
            let scheduler = loop.scheduler
            let counted = statistics[index]
            scheduler.io.sharedStatistics = counted
            placements.append(
                CrossLoopMailbox(from: first.scheduler, to: scheduler, counting: counted) { batch in
                    for placed in batch { placed.open(on: scheduler, counting: counted) }
                })
            others.append(loop)
        }
        self.others = others
        self.placements = placements
        schedulers = [first.scheduler] + others.map(\.scheduler)
    }

    /// Starts the loops other than the first, each on its own thread. Once.
    public func start() {
        for (index, loop) in others.enumerated() { loop.start(name: "runnel-loop-\(index + 1)") }
    }

    /// How many loops: one per CPU this process may run on (its affinity mask), as libuv
    /// counts them.
    public static var availableParallelism: Int { Int(uv_available_parallelism()) }

    /// The number of loops.
    public var count: Int { statistics.count }

    /// The turn lengths of loop `index`, as it last recorded them. Any thread.
    public func turnLengths(ofLoop index: Int) -> TurnLengths { statistics[index].recordedTurnLengths }

    /// Places `connection`, just accepted on the first loop and not yet read or written, on
    /// the least loaded loop (`leastLoaded`), with the filter `makeFilter` makes (TLS), and
    /// hands it to that loop's acceptor (`acceptors[index]`, called on that loop's thread):
    /// the connection itself on the first loop, a connection opened for its socket on another.
    /// Closed instead when the filter or the move fails. First loop thread.
    func place(
        _ connection: TCPConnection, makeFilter: (() throws -> any ConnectionFilter)?,
        acceptors: [ConnectionAcceptor]
    ) {
        first.assertOnLoopThread()
        precondition(acceptors.count == count, "one acceptor per loop")
        let index = leastLoaded()
        let filter: (any ConnectionFilter)?
        do {
            filter = try makeFilter?()
        } catch {
            connection.close()
            return
        }
        guard index > 0, let placements = placements[index] else {
            PlacedSocket.counted(connection, in: statistics[0])
            if let filter { connection.attach(filter: filter) }
            return acceptors[0](connection)
        }
        // On a failure the connection is closed, its socket with it.
        guard let socket = try? connection.detachSocket() else { return }
        // Counted now, so the rest of this turn's placements see it.
        statistics[index].openConnections.add(1, ordering: .relaxed)
        placements.post(
            PlacedSocket(
                socket: socket, configuration: connection.configuration, filter: filter, acceptor: acceptors[index]))
    }

    /// The loop with the fewest open connections; among those with as few, one whose recent
    /// turns (`LoopStatistics.recentTurnNanoseconds`) are shorter by more than `busyMargin`
    /// than another's, so a loop kept busy by the connections it has gets fewer new ones. The
    /// search starts one past the last choice, so that loops alike take turns.
    private func leastLoaded() -> Int {
        var best = nextCandidate % count
        for step in 1..<count {
            let index = (nextCandidate + step) % count
            let (candidate, chosen) = (statistics[index], statistics[best])
            if candidate.connections < chosen.connections
                || (candidate.connections == chosen.connections
                    && candidate.recentTurnNanoseconds &+ Self.busyMargin < chosen.recentTurnNanoseconds)
            {
                best = index
            }
        }
        nextCandidate = best + 1
        return best
    }

    /// How much longer a loop's recent turns must be than another's for it to lose a tie
    /// (nanoseconds): less is noise, a turn of a loop with nothing to do takes microseconds.
    static let busyMargin: UInt64 = 1_000_000

    /// Stops the loops other than the first: closes what is left on them and ends their
    /// threads. Call once the first loop has stopped serving. Any thread.
    public func shutdown() {
        for loop in others { loop.shutdown() }
    }
}

/// What takes the connections placed on one loop: called on that loop's thread with each
/// connection, its filter attached, before it has read or written.
public typealias ConnectionAcceptor = @Sendable (TCPConnection) -> Void

/// A socket on its way to the loop it was placed on, with what its connection is made with
/// there. Thread rules: made on the first loop, opened on the target's.
private struct PlacedSocket: @unchecked Sendable {
    let socket: Int32
    let configuration: TCPConnection.Configuration
    let filter: (any ConnectionFilter)?
    let acceptor: ConnectionAcceptor

    /// Opens the connection on `loop` (whose thread this is) and hands it to the acceptor; a
    /// socket libuv refuses is closed. The loop counted it when it was placed.
    func open(on loop: LoopScheduler, counting statistics: LoopStatistics) {
        guard let connection = try? TCPConnection.adopting(socket: socket, on: loop, configuration: configuration)
        else {
            statistics.openConnections.subtract(1, ordering: .relaxed)
            return
        }
        connection.onClose { statistics.openConnections.subtract(1, ordering: .relaxed) }
        if let filter { connection.attach(filter: filter) }
        acceptor(connection)
    }

    /// Counts `connection` among its loop's open ones until it closes.
    static func counted(_ connection: TCPConnection, in statistics: LoopStatistics) {
        statistics.openConnections.add(1, ordering: .relaxed)
        connection.onClose { statistics.openConnections.subtract(1, ordering: .relaxed) }
    }
}
