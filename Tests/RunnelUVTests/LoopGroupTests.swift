import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelUV

/// A value handed to the loop thread by a test that knows only that thread touches it.
private struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension RunnelUVTests {
    /// A `LoopGroup` spreading a listener's connections: sockets on the other loops reach the
    /// first loop as `RelayedStream`s that behave as its own connections do (run under the
    /// thread sanitizer in CI).
    @Suite struct LoopGroupTests {
        /// A first loop, a group of `count`, and a listener on the first loop whose placed
        /// connections get `delegate(stream)` and, unless told otherwise, start reading.
        final class Server: @unchecked Sendable {
            let loop = EventLoop.started()
            let group: LoopGroup
            let listener: TCPListener
            let accepted = Shared<[any LineConnection]>([])

            init(
                loops count: Int, startsReading: Bool = true,
                delegate: @escaping @Sendable (any LineConnection) -> (any LineReaderDelegate)?
            ) throws {
                group = LoopGroup(first: loop, count: count)
                listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: loop)
                let (listener, group, accepted) = (listener, group, accepted)
                let scheduler = loop.scheduler
                _ = onLoop(loop) {
                    listener.loopGroup = group
                    listener.onAcceptStream = { stream in
                        precondition(scheduler.isOnLoopThread)
                        accepted.withLock { $0.append(stream) }
                        stream.readLines(into: delegate(stream))
                        if startsReading { stream.startReading() }
                    }
                    return true
                }
            }

            var port: Int { listener.port }

            /// Connects a client and waits for its stream, the `index`th accepted.
            func connectClient(index: Int = 0) throws -> (client: BlockingTCPClient, stream: any LineConnection) {
                let client = try BlockingTCPClient(port: port)
                try #require(eventually { accepted.current.count == index + 1 })
                return (client, accepted.current[index])
            }

            func stop() -> Int32? {
                accepted.withLock { $0.removeAll() }
                let status = loop.shutdown()
                group.shutdown()
                return status
            }
        }

        @Test func spreadsConnectionsOverTheLoopsAndRelaysBothWays() throws {
            let server = try Server(loops: 3) { stream in RecordingDelegate(echo: true, scheduler: nil) }
            var clients: [BlockingTCPClient] = []
            for index in 0..<6 {
                let (client, _) = try server.connectClient(index: index)
                clients.append(client)
            }
            #expect(server.group.statistics.map(\.connections) == [2, 2, 2])
            let relayed = server.accepted.current.filter { $0 is RelayedStream }.count
            #expect(relayed == 4)
            for (index, client) in clients.enumerated() {
                try client.sendRaw("hello \(index)\nsecond \(index)\n")
            }
            for (index, client) in clients.enumerated() {
                #expect(client.readLine() == "hello \(index)")
                #expect(client.readLine() == "second \(index)")
            }
            let remote = server.accepted.current.map { stream in
                let stream = Unchecked(stream)
                return onLoop(server.loop) { stream.value.remoteAddress }
            }
            #expect(remote.allSatisfy { $0.hasPrefix("127.0.0.1:") })
            clients.removeAll()
            #expect(eventually { server.group.statistics.map(\.connections) == [0, 0, 0] })
            #expect(server.stop() == 0)
        }

        @Test func theDelegateRunsOnTheFirstLoop() throws {
            let scheduler = Shared<LoopScheduler?>(nil)
            let recorders = Shared<[RecordingDelegate]>([])
            let server = try Server(loops: 2) { _ in
                let recorder = RecordingDelegate(echo: true, scheduler: scheduler.current)
                recorders.withLock { $0.append(recorder) }
                return recorder
            }
            scheduler.withLock { $0 = server.loop.scheduler }
            let (first, _) = try server.connectClient(index: 0)
            let (second, stream) = try server.connectClient(index: 1)
            #expect(stream is RelayedStream)
            try first.send("one")
            try second.send("two")
            #expect(first.readLine() == "one")
            #expect(second.readLine() == "two")
            #expect(recorders.current.allSatisfy { $0.record.current.sawLoopScheduler })
            #expect(server.stop() == 0)
        }

        /// The peer's end of input reaches the stream after its last lines, and what the stream
        /// writes in answer still goes out before the close (netcat's `printf ... | nc`).
        @Test func aHalfClosedPeerGetsEveryAnswerBeforeTheClose() throws {
            let server = try Server(loops: 2) { _ in RecordingDelegate(echo: true) }
            _ = try server.connectClient(index: 0)
            let (client, stream) = try server.connectClient(index: 1)
            #expect(stream is RelayedStream)
            let lines = (0..<500).map { "line \($0)" }
            try client.sendRaw(lines.joined(separator: "\n") + "\n")
            client.shutdownWrite()
            #expect(client.readUntilClosed() == lines)
            #expect(server.stop() == 0)
        }

        /// Input that arrives while the stream does not read waits (the socket is not read past
        /// the relay's credit) and none of it is lost when reading resumes.
        @Test func aStreamThatStopsReadingLosesNothing() throws {
            let recorder = RecordingDelegate()
            let server = try Server(loops: 2, startsReading: false) { _ in recorder }
            _ = try server.connectClient(index: 0)
            let (client, connected) = try server.connectClient(index: 1)
            let stream = Unchecked(connected)
            let lines = (0..<20_000).map { "a line of some length, number \($0)" }
            try client.sendRaw(lines.joined(separator: "\n") + "\n")
            #expect(recorder.lines.isEmpty)
            _ = onLoop(server.loop) {
                stream.value.startReading()
                return true
            }
            #expect(eventually { recorder.lines.count == lines.count })
            #expect(recorder.lines == lines)
            #expect(server.stop() == 0)
        }

        /// Unsent output is what the peer has not taken yet: a waiter for it to fall runs once
        /// the peer reads, and `sentBytes` grows as it does.
        @Test func unsentBytesFallAsThePeerReads() throws {
            let server = try Server(loops: 2) { _ in nil }
            _ = try server.connectClient(index: 0)
            let (client, connected) = try server.connectClient(index: 1)
            let stream = Unchecked(connected)
            let total = 8 << 20
            let drained = Shared(false)
            _ = onLoop(server.loop) {
                let block = [UInt8](repeating: 120, count: 64 * 1024)
                for _ in 0..<(total / block.count) { block.withUnsafeBytes { _ = stream.value.write(copying: $0) } }
                stream.value.whenUnsentBytes(fallTo: 0) { drained.withLock { $0 = true } }
                return true
            }
            #expect(eventually { onLoop(server.loop) { stream.value.unsentBytes } > 1 << 20 })
            #expect(!drained.current)
            #expect(client.readBytes(count: total).count == total)
            #expect(eventually { drained.current })
            #expect(onLoop(server.loop) { stream.value.sentBytes } == UInt64(total))
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
            let (client, connected) = try server.connectClient(index: 0)
            let recorder = Recorder(try #require(connected as? TCPConnection))
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

        @Test func closeAfterFlushWritesEverythingThenCloses() throws {
            let closed = Shared(false)
            let server = try Server(loops: 2) { _ in nil }
            _ = try server.connectClient(index: 0)
            let (client, connected) = try server.connectClient(index: 1)
            let stream = Unchecked(connected)
            #expect(connected is RelayedStream)
            let stillOpen = onLoop(server.loop) {
                stream.value.onClose { closed.withLock { $0 = true } }
                for index in 0..<1000 {
                    Array("value \(index)".utf8).withUnsafeBytes { _ = stream.value.writeLine(copying: $0) }
                }
                stream.value.closeAfterFlush(timeout: .seconds(5))
                return stream.value.isOpen
            }
            #expect(!stillOpen)
            #expect(client.readUntilClosed() == (0..<1000).map { "value \($0)" })
            #expect(eventually { closed.current })
            #expect(server.stop() == 0)
        }
    }
}
