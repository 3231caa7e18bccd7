import CLibUV
import Runnel
import RunnelBytes

/// The loops of one process: the first, which owns the protocol's state (and serves sockets
/// too), and the others, each on a thread of its own, which serve sockets only. A listener
/// given the group (`TCPListener.loopGroup`) has it place each accepted connection
/// (`place(_:makeFilter:)`) on the loop with the fewest open connections: on the first loop the
/// connection stays as it is; on another its socket moves there and the first loop gets a
/// `RelayedStream` in its place. What the other loops spend per connection (the system calls
/// that read and write it, its TLS) is then spread over the cores, while everything above the
/// bytes runs on the first loop as before, so no lock is taken per delivery: a turn's output for
/// one loop crosses as one batch, and its reads come back the same way (`CrossLoopMailbox`).
///
/// Thread rules: `place` on the first loop's thread; `statistics`, `count` and `shutdown()`
/// from any thread. Lifetime rule: the other loops run from `init` until `shutdown()`, which
/// the owner calls once the first loop has stopped (their connections closed by then); each
/// other loop's mailboxes live as long as the group.
public final class LoopGroup: @unchecked Sendable {
    /// The loop the protocol runs on.
    public let first: LoopScheduler
    /// Each loop's figures, the first loop's at index 0.
    public let statistics: [LoopStatistics]
    private let others: [EventLoop]
    /// For each loop but the first (index 0 unused): the commands to its relays, and the events
    /// back.
    private let commands: [CrossLoopMailbox<RelayCommand>?]
    private let events: [CrossLoopMailbox<RelayEvent>?]
    /// Where the search for the least loaded loop starts, turned after each placement so ties
    /// go round (first loop thread).
    private var nextCandidate = 0

    /// A group of `count` loops (at least 1) whose first is `first`: starts the others.
    public init(first: EventLoop, count: Int) {
        precondition(count >= 1, "a group has at least one loop")
        self.first = first.scheduler
        statistics = (0..<count).map { LoopStatistics(index: $0) }
        var others: [EventLoop] = []
        var commands: [CrossLoopMailbox<RelayCommand>?] = [nil]
        var events: [CrossLoopMailbox<RelayEvent>?] = [nil]
        for index in 1..<count {
            let loop = EventLoop()
            loop.scheduler.io.sharedStatistics = statistics[index]
            commands.append(
                CrossLoopMailbox(from: first.scheduler, to: loop.scheduler, counting: statistics[index]) { batch in
                    for command in batch { StreamRelay.handle(command) }
                })
            events.append(
                CrossLoopMailbox(from: loop.scheduler, to: first.scheduler, counting: statistics[0]) { batch in
                    for event in batch { RelayedStream.handle(event) }
                })
            loop.start(name: "runnel-loop-\(index)")
            others.append(loop)
        }
        self.others = others
        self.commands = commands
        self.events = events
    }

    /// How many loops: one per CPU this process may run on (its affinity mask), as libuv
    /// counts them.
    public static var availableParallelism: Int { Int(uv_available_parallelism()) }

    /// The number of loops.
    public var count: Int { statistics.count }

    /// The turn lengths of loop `index`: read on the first loop for itself, else the copy
    /// that loop publishes. First loop thread for index 0.
    public func turnLengths(ofLoop index: Int) -> TurnLengths {
        index == 0 ? first.turnLengths : statistics[index].recordedTurnLengths
    }

    /// Places `connection`, just accepted on the first loop and not yet read or written, on
    /// the loop with the fewest connections, with the filter `makeFilter` makes (TLS): the
    /// connection itself when that is the first loop, else a `RelayedStream` for its socket,
    /// which has moved. Nil (the connection closed) when the filter or the move fails. First
    /// loop thread.
    func place(_ connection: TCPConnection, makeFilter: (() throws -> any ConnectionFilter)?) -> (any LineConnection)? {
        first.assertOnLoopThread()
        let index = leastLoaded()
        let filter: (any ConnectionFilter)?
        do {
            filter = try makeFilter?()
        } catch {
            connection.close()
            return nil
        }
        let counted = statistics[index]
        guard index > 0, let commands = commands[index], let events = events[index] else {
            if let filter { connection.attach(filter: filter) }
            counted.openConnections.add(1, ordering: .relaxed)
            connection.onClose { counted.openConnections.subtract(1, ordering: .relaxed) }
            return connection
        }
        let socket: Int32
        do {
            socket = try connection.detachSocket()
        } catch {
            return nil
        }
        let relay = StreamRelay(events: events)
        let stream = RelayedStream(
            loop: first, relay: relay, commands: commands, configuration: connection.configuration,
            remoteAddress: connection.remoteAddress)
        relay.stream = stream
        var farConfiguration = connection.configuration
        farConfiguration.drainsAtEndOfInput = false
        counted.openConnections.add(1, ordering: .relaxed)
        stream.onClose { counted.openConnections.subtract(1, ordering: .relaxed) }
        commands.post(.open(relay, socket: socket, configuration: farConfiguration, filter: filter))
        return stream
    }

    /// The loop with the fewest open connections, the search starting one past the last
    /// choice so that ties take turns.
    private func leastLoaded() -> Int {
        var best = nextCandidate % count
        for step in 1..<count {
            let index = (nextCandidate + step) % count
            if statistics[index].connections < statistics[best].connections { best = index }
        }
        nextCandidate = best + 1
        return best
    }

    /// Stops the loops other than the first: closes what is left on them and ends their
    /// threads. Call once the first loop has stopped serving. Any thread.
    public func shutdown() {
        for loop in others { loop.shutdown() }
    }
}
