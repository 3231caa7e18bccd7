import Runnel
import RunnelBytes
import RunnelTestSupport
import Testing

@testable import RunnelUV

extension RunnelUVTests {
    /// A `LoopGroup` spreading a listener's connections: each is served for life by the loop it
    /// was placed on, whose acceptor gets it on that loop's thread (run under the thread
    /// sanitizer in CI).
    @Suite struct LoopGroupTests {
        /// A first loop, a group of `count` and a listener spread over it, whose acceptor for
        /// each loop records the connection and the loop it ran on, gives it
        /// `delegate(loop index)` and starts it reading.
        final class Server: @unchecked Sendable {
            let loop = EventLoop.started()
            let group: LoopGroup
            let listener: TCPListener
            /// Each accepted connection, with the index of the loop whose acceptor took it and
            /// whether that ran on that loop's thread.
            let accepted = Shared<[(connection: TCPConnection, loop: Int, onItsThread: Bool)]>([])

            init(
                loops count: Int, makeFilter: (@Sendable () throws -> any ConnectionFilter)? = nil,
                delegate: @escaping @Sendable (Int) -> (any LineReaderDelegate)?
            ) throws {
                group = LoopGroup(first: loop, count: count)
                group.start()
                listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: loop)
                let accepted = accepted
                let acceptors: [ConnectionAcceptor] = group.schedulers.enumerated().map { index, scheduler in
                    { connection in
                        accepted.withLock { $0.append((connection, index, scheduler.isOnLoopThread)) }
                        connection.readLines(into: delegate(index))
                        connection.startReading()
                    }
                }
                let (listener, group) = (listener, group)
                _ = onLoop(loop) {
                    listener.makeFilter = makeFilter
                    listener.spread(over: group, acceptors: acceptors)
                    return true
                }
            }

            var port: Int { listener.port }

            /// Connects a client and waits for its connection, the `index`th accepted.
            func connectClient(index: Int = 0) throws -> BlockingTCPClient {
                let client = try BlockingTCPClient(port: port)
                try #require(eventually { accepted.current.count == index + 1 })
                return client
            }

            func stop() -> Int32? {
                accepted.withLock { $0.removeAll() }
                let status = loop.shutdown()
                group.shutdown()
                return status
            }
        }

        @Test func eachLoopServesTheConnectionsPlacedOnIt() throws {
            let server = try Server(loops: 3) { index in RecordingDelegate(echo: true) }
            var clients: [BlockingTCPClient] = []
            for index in 0..<6 {
                clients.append(try server.connectClient(index: index))
            }
            #expect(server.group.statistics.map(\.connections) == [2, 2, 2])
            #expect(server.accepted.current.map(\.loop).sorted() == [0, 0, 1, 1, 2, 2])
            #expect(server.accepted.current.allSatisfy { $0.onItsThread })
            for (index, client) in clients.enumerated() {
                try client.sendRaw("hello \(index)\nsecond \(index)\n")
            }
            for (index, client) in clients.enumerated() {
                #expect(client.readLine() == "hello \(index)")
                #expect(client.readLine() == "second \(index)")
            }
            clients.removeAll()
            #expect(eventually { server.group.statistics.map(\.connections) == [0, 0, 0] })
            #expect(server.stop() == 0)
        }

        /// The delegate runs on the loop the connection was placed on, not the first.
        @Test func theDelegateRunsOnItsConnectionsLoop() throws {
            let recorders = Shared<[RecordingDelegate]>([])
            let group = Shared<LoopGroup?>(nil)
            let server = try Server(loops: 2) { index in
                let recorder = RecordingDelegate(echo: true, scheduler: group.current?.schedulers[index])
                recorders.withLock { $0.append(recorder) }
                return recorder
            }
            group.withLock { $0 = server.group }
            let first = try server.connectClient(index: 0)
            let second = try server.connectClient(index: 1)
            try first.send("one")
            try second.send("two")
            #expect(first.readLine() == "one")
            #expect(second.readLine() == "two")
            #expect(recorders.current.count == 2)
            #expect(recorders.current.allSatisfy { $0.record.current.sawLoopScheduler })
            #expect(server.stop() == 0)
        }

        /// Among loops with as few connections, one whose recent turns were long loses to one
        /// whose turns were short, though the turn to take a connection was its own.
        @Test func aBusyLoopLosesATie() throws {
            let server = try Server(loops: 2) { _ in RecordingDelegate(echo: true) }
            // The first connection goes to loop 0, so loop 1 would take the next; it closes.
            do { _ = try server.connectClient(index: 0) }
            #expect(eventually { server.group.statistics.map(\.connections) == [0, 0] })
            // Turns of at least 4 ms on loop 1, each its own wake-up.
            let busy = server.group.schedulers[1]
            let ran = Shared(0)
            for turn in 1...12 {
                busy.schedule {
                    let start = ContinuousClock.now
                    while ContinuousClock.now - start < .milliseconds(4) {}
                    ran.withLock { $0 += 1 }
                }
                try #require(eventually { ran.current == turn })
            }
            let recent = server.group.statistics.map(\.recentTurnNanoseconds)
            #expect(recent[1] > recent[0] + LoopGroup.busyMargin, "recent turns: \(recent)")
            let second = try server.connectClient(index: 1)
            #expect(server.accepted.current[1].loop == 0)
            // Fewer connections come first, however busy: the next goes to loop 1.
            let third = try server.connectClient(index: 2)
            #expect(server.accepted.current[2].loop == 1)
            withExtendedLifetime((second, third)) { #expect(server.stop() == 0) }
        }

        /// A connection placed on another loop still answers a half-closed peer in full before
        /// it closes (netcat's `printf ... | nc`).
        @Test func aHalfClosedPeerGetsEveryAnswerBeforeTheClose() throws {
            let server = try Server(loops: 2) { _ in RecordingDelegate(echo: true) }
            _ = try server.connectClient(index: 0)
            let client = try server.connectClient(index: 1)
            #expect(server.accepted.current[1].loop == 1)
            let lines = (0..<500).map { "line \($0)" }
            try client.sendRaw(lines.joined(separator: "\n") + "\n")
            client.shutdownWrite()
            #expect(client.readUntilClosed() == lines)
            #expect(server.stop() == 0)
        }

        /// A filter that cannot be made closes the connection before any loop takes it.
        @Test func aFilterThatFailsClosesTheConnection() throws {
            struct Refused: Error {}
            let server = try Server(loops: 2, makeFilter: { throw Refused() }) { _ in RecordingDelegate(echo: true) }
            let client = try BlockingTCPClient(port: server.port)
            #expect(client.readUntilClosed() == [])
            #expect(server.accepted.current.isEmpty)
            #expect(server.group.statistics.map(\.connections) == [0, 0])
            #expect(server.stop() == 0)
        }

        /// At a turn's end the hand-offs to other loops go before the loop's own connections are
        /// written, so the other loops write at the same time: turn-end work queued with output
        /// still finds that output unwritten.
        @Test func handOffsGoBeforeTheLoopsOwnWrites() throws {
            final class Recorder: TurnEndWork, @unchecked Sendable {
                let connection: TCPConnection
                let unsentAtTurnEnd = Shared<Int?>(nil)
                init(_ connection: TCPConnection) { self.connection = connection }
                func turnEnded() { unsentAtTurnEnd.withLock { $0 = connection.pendingBytes } }
            }
            let server = try Server(loops: 1) { _ in nil }
            let client = try server.connectClient(index: 0)
            let recorder = Recorder(server.accepted.current[0].connection)
            let scheduler = server.loop.scheduler
            _ = onLoop(server.loop) {
                Array("queued\n".utf8).withUnsafeBytes { _ = recorder.connection.write(copying: $0) }
                scheduler.io.atTurnEnd(recorder)
                return true
            }
            #expect(client.readLine() == "queued")
            #expect(recorder.unsentAtTurnEnd.current == 7)
            #expect(server.stop() == 0)
        }
    }
}
