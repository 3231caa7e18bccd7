import Runnel
import RunnelBytes
import RunnelTestSupport
import RunnelUV
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension RunnelUVTests {
    @Suite struct TCPTests {
        /// A loop with a listener whose connections get `delegate(connection)` and start reading.
        final class Server: @unchecked Sendable {
            let loop = EventLoop.started()
            let listener: TCPListener
            let accepted = Shared<[TCPConnection]>([])

            init(
                host: String = "127.0.0.1", configuration: TCPConnection.Configuration = .init(),
                startsReading: Bool = true,
                delegate: @escaping @Sendable (TCPConnection) -> (any LineReaderDelegate)?
            ) throws {
                listener = try TCPListener.bind(host: host, port: 0, configuration: configuration, on: loop)
                let accepted = self.accepted
                let scheduler = loop.scheduler
                loop.scheduler.schedule { [listener] in
                    listener.onAccept = { connection in
                        precondition(scheduler.isOnLoopThread)
                        accepted.withLock { $0.append(connection) }
                        connection.readLines(into: delegate(connection))
                        if startsReading { connection.startReading() }
                    }
                }
                // `onAccept` is set through the loop's queue: wait until it is.
                _ = onLoop(loop) { true }
            }

            var port: Int { listener.port }

            /// Connects a client and waits for the server's side of it, the only one accepted.
            func connectClient() throws -> (client: BlockingTCPClient, connection: TCPConnection) {
                let client = try BlockingTCPClient(port: port)
                try #require(eventually { accepted.current.count == 1 })
                return (client, accepted.current[0])
            }

            func stop() -> Int32? {
                accepted.withLock { $0.removeAll() }
                return loop.shutdown()
            }
        }

        @Test func echoesLinesOverIPv4() throws {
            let recorder = RecordingDelegate(echo: true)
            let server = try Server { _ in recorder }
            #expect(server.port > 0)
            let client = try BlockingTCPClient(port: server.port)
            try client.sendRaw("hello\r\nworld\n\nlast")
            let echoed = client.readBytes(count: 13)
            #expect(String(decoding: echoed, as: UTF8.self) == "hello\nworld\n\n")
            #expect(recorder.lines == ["hello", "world", ""])
            let remote = server.accepted.current.first.map { connection in
                onLoop(server.loop) { connection.remoteAddress }
            }
            #expect(remote?.hasPrefix("127.0.0.1:") == true)
            #expect(server.stop() == 0)
        }

        @Test func echoesLinesOverIPv6() throws {
            let recorder = RecordingDelegate(echo: true)
            let server: Server
            do {
                server = try Server(host: "::1") { _ in recorder }
            } catch let error as UVError where error.name == "EADDRNOTAVAIL" || error.name == "EAFNOSUPPORT" {
                return  // no IPv6 loopback on this machine
            }
            let client = try BlockingTCPClient(host: "::1", port: server.port)
            try client.sendRaw("six\n")
            #expect(String(decoding: client.readBytes(count: 4), as: UTF8.self) == "six\n")
            let remote = server.accepted.current.first.map { connection in
                onLoop(server.loop) { connection.remoteAddress }
            }
            #expect(remote?.hasPrefix("[::1]:") == true)
            #expect(server.stop() == 0)
        }

        @Test func readCallbacksSeeTheLoopAsCurrentScheduler() throws {
            let recorder = Shared<RecordingDelegate?>(nil)
            let server = try Server { connection in
                let delegate = RecordingDelegate(scheduler: currentScheduler as? LoopScheduler)
                recorder.withLock { $0 = delegate }
                return delegate
            }
            let client = try BlockingTCPClient(port: server.port)
            try client.sendRaw("one\n")
            #expect(eventually { recorder.current?.lines == ["one"] })
            #expect(recorder.current?.record.current.sawLoopScheduler == true)
            #expect(server.stop() == 0)
        }

        @Test func aLineSentOneByteAtATimeReassembles() throws {
            let recorder = RecordingDelegate()
            let server = try Server { _ in recorder }
            let client = try BlockingTCPClient(port: server.port)
            let line = "a line sent byte by byte\r\n"
            for byte in line.utf8 {
                try client.sendRaw([byte])
                usleep(200)  // pace the bytes so they arrive in separate reads
            }
            try client.sendRaw("next\n")
            #expect(eventually { recorder.lines.count == 2 })
            #expect(recorder.lines == ["a line sent byte by byte", "next"])
            #expect(server.stop() == 0)
        }

        /// The first line alone goes to `didReadFirstLine`, however the reads cut it, a TLS
        /// hello (with `deliversTLSHelloAsLine`) stands for it, and the other lines go on as
        /// before.
        @Test func theFirstLineGoesToADelegateCallOfItsOwn() throws {
            let recorder = FirstLineRecorder()
            let server = try Server(configuration: .init(maxLineLength: 8)) { _ in recorder }
            let client = try BlockingTCPClient(port: server.port)
            try client.sendRaw("fir")
            usleep(20_000)  // so the first line is cut between reads
            try client.sendRaw("st\nsecond\nthi")
            usleep(20_000)
            try client.sendRaw("rd\nfar too long\nlast\n")
            #expect(eventually { recorder.calls.current.count == 5 })
            #expect(recorder.calls.current == ["first first", "line second", "line third", "long 12", "line last"])
            #expect(server.stop() == 0)

            let tooLong = FirstLineRecorder()
            let second = try Server(configuration: .init(maxLineLength: 8)) { _ in tooLong }
            try BlockingTCPClient(port: second.port).sendRaw("far too long\nnext\n")
            #expect(eventually { tooLong.calls.current == ["long 12", "line next"] })
            #expect(second.stop() == 0)

            let hello = FirstLineRecorder()
            let third = try Server(configuration: .init(deliversTLSHelloAsLine: true)) { _ in hello }
            try BlockingTCPClient(port: third.port).sendRaw([0x16, 0x03, 0x01])
            #expect(eventually { hello.calls.current == ["line \u{16}\u{3}\u{1}"] })
            #expect(third.stop() == 0)
        }

        /// Regression: a read ending on a newline with no delegate attached held an empty
        /// remainder and force-unwrapped a line buffer that did not exist yet (a remote crash).
        @Test func readsWithoutADelegateThatEndOnANewlineAreDropped() throws {
            let server = try Server { _ in nil }
            let client = try BlockingTCPClient(port: server.port)
            try client.sendRaw("dropped\n")
            usleep(20_000)  // let the line arrive in a read of its own
            try client.sendRaw("a split ")
            usleep(20_000)
            try client.sendRaw("line\nand more\n")
            #expect(eventually { server.accepted.current.count == 1 })
            let connection = try #require(server.accepted.current.first)
            let recorder = RecordingDelegate()
            onLoop(server.loop) { connection.readLines(into: recorder) }
            try client.sendRaw("kept\n")
            #expect(eventually { recorder.lines == ["kept"] })
            #expect(server.stop() == 0)
        }

        @Test func aBurstYieldsToTheLoopOnceItsReadBudgetIsSpent() throws {
            let counter = BurstCounter()
            let server = try Server(startsReading: false) { _ in counter }
            let client = try BlockingTCPClient(port: server.port)
            // 1 MB of lines, all waiting in the kernel's buffers before the server reads any.
            let lineCount = 10_000
            var burst: [UInt8] = []
            burst.reserveCapacity(lineCount * 100)
            for _ in 0..<lineCount { burst += [UInt8](repeating: UInt8(ascii: "x"), count: 99) + [10] }
            #expect(eventually { server.accepted.current.count == 1 })
            // A receive buffer big enough for the whole burst, so each read fills libuv's
            // 256 KiB buffer (the default 128 KiB would end every read short, and libuv stops
            // reading a socket after a short read with or without a budget).
            let serverSide = try #require(peerDescriptor(of: client.descriptor))
            var size: Int32 = 4 << 20
            setsockopt(serverSide, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            try client.sendRaw(burst)
            let connection = server.accepted.current[0]
            onLoop(server.loop) { connection.startReading() }
            #expect(eventually { counter.state.current.lines == lineCount })
            // A block queued on the loop at the first line runs once the connection has yielded:
            // within two turns, each reading at most the budget plus one 256 KiB read. Without
            // the budget libuv reads a full socket up to 32 times in a row: all 1 MB first.
            let bound = 2 * (TCPConnection.readBudgetPerTurn + 256 * 1024) / 100
            let ranAfter = counter.state.current.blockRanAfter
            #expect(ranAfter != nil && ranAfter! <= bound)
            #expect(server.stop() == 0)
        }

        @Test func aTenMegabyteLineOverAOneMegabyteLimitIsDiscardedAndReported() throws {
            let recorder = RecordingDelegate()
            let server = try Server(configuration: .init(maxLineLength: 1 << 20)) { _ in recorder }
            let client = try BlockingTCPClient(port: server.port)
            try client.sendRaw("before\n")
            try client.sendRaw([UInt8](repeating: UInt8(ascii: "x"), count: 10 << 20))
            try client.sendRaw("\nafter\n")
            #expect(eventually { recorder.lines.count == 2 })
            #expect(recorder.lines == ["before", "after"])
            #expect(recorder.record.current.discarded == [10 << 20])
            #expect(server.stop() == 0)
        }

        @Test func aLineOfExactlyTheLimitIsKept() throws {
            let recorder = RecordingDelegate()
            let server = try Server(configuration: .init(maxLineLength: 8)) { _ in recorder }
            let client = try BlockingTCPClient(port: server.port)
            try client.sendRaw("12345678\n123456789\nok\n")
            #expect(eventually { recorder.lines.count == 2 })
            #expect(recorder.lines == ["12345678", "ok"])
            #expect(recorder.record.current.discarded == [9])
            #expect(server.stop() == 0)
        }

        @Test func pendingBytesCountsAcceptedUntilConfirmed() throws {
            let server = try Server { _ in nil }
            let (client, connection) = try server.connectClient()
            let shared = ByteBuffer(Array("shared bytes\n".utf8))
            let pendingAfterWrites = onLoop(server.loop) { () -> Int in
                let text = Array("copied\n".utf8)
                _ = text.withUnsafeBytes { connection.write(copying: $0) }
                connection.write(shared)
                _ = text.withUnsafeBytes { connection.write(copying: $0) }
                return connection.pendingBytes
            }
            #expect(pendingAfterWrites == 7 + 13 + 7)
            let received = client.readBytes(count: 27)
            #expect(String(decoding: received, as: UTF8.self) == "copied\nshared bytes\ncopied\n")
            #expect(eventually { onLoop(server.loop) { connection.pendingBytes } == 0 })
            #expect(server.stop() == 0)
        }

        /// A turn's output goes straight to the socket while libuv holds nothing earlier for it,
        /// and the part the kernel does not take goes through `uv_write`; later turns queue
        /// behind it. The peer reads every line, in order, whichever way each one went.
        @Test func outputStaysInOrderWhenTheKernelTakesOnlyPartOfATurn() throws {
            let server = try Server { _ in nil }
            let (client, connection) = try server.connectClient()
            let turns = 200
            let linesPerTurn = 100
            // Mostly small lines, copied into chunks; every 25th is a segment of its own, so a
            // partial write can end anywhere in a list of several buffers.
            let lines = (0..<turns * linesPerTurn).map { number in
                Array("\(number) \(String(repeating: "x", count: number % 25 == 0 ? 5000 : 300))\n".utf8)
            }
            var mostLeftOver = 0
            for turn in 0..<turns {
                // Each call is a loop turn of its own: ~50 KiB, flushed in the check phase.
                let leftOver = onLoop(server.loop) { () -> Int in
                    let leftOver = connection.unsentBytes
                    for line in lines[turn * linesPerTurn..<(turn + 1) * linesPerTurn] {
                        if line.count > ByteBuffer.copyThreshold {
                            connection.write(ByteBuffer(line))
                        } else {
                            _ = line.withUnsafeBytes { connection.write(copying: $0) }
                        }
                    }
                    return leftOver
                }
                mostLeftOver = max(mostLeftOver, leftOver)
            }
            // 10 MB against a peer that has not read yet: the kernel took only part of it.
            #expect(mostLeftOver > 0)
            let expected = lines.reduce(0) { $0 + $1.count }
            let received = client.readBytes(count: expected)
            #expect(received.count == expected)
            var next = 0
            for line in received.split(separator: UInt8(ascii: "\n")) {
                guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { break }
                guard Int(String(decoding: line[..<space], as: UTF8.self)) == next else { break }
                guard line.count == lines[next].count - 1 else { break }
                next += 1
            }
            #expect(next == turns * linesPerTurn, "lines out of order or missing after line \(next)")
            #expect(eventually { onLoop(server.loop) { connection.pendingBytes } == 0 })
            #expect(server.stop() == 0)
        }

        /// The hook a server uses to stop reading requests while their replies pile up: it runs
        /// at once when the output is already low enough, else once, when a completed write
        /// brings it there.
        @Test func whenUnsentBytesFallToRunsOnceTheOutputHasDrainedThatFar() throws {
            let server = try Server { _ in nil }
            let (client, connection) = try server.connectClient()
            let runs = Shared<[String]>([])
            let unsentAfterWrites = onLoop(server.loop) { () -> Int in
                connection.whenUnsentBytes(fallTo: 0) { runs.withLock { $0.append("idle") } }
                let block = ByteBuffer(count: 1 << 20) { $0.initializeMemory(as: UInt8.self, repeating: 42) }
                for _ in 0..<32 { connection.write(block) }
                connection.whenUnsentBytes(fallTo: 1 << 20) {
                    runs.withLock { $0.append(connection.unsentBytes <= 1 << 20 ? "fell" : "early") }
                }
                return connection.unsentBytes
            }
            #expect(unsentAfterWrites > 1 << 20)
            #expect(runs.current == ["idle"])
            usleep(200_000)
            #expect(runs.current == ["idle"], "ran while the peer was not reading")
            #expect(client.readBytes(count: 32 << 20).count == 32 << 20)
            #expect(eventually { runs.current == ["idle", "fell"] })
            #expect(server.stop() == 0)
        }

        /// The cheap limit check agrees with `unsentBytes` in every state output passes through:
        /// queued here, queued in libuv, and partly handed to the kernel from a write libuv still
        /// holds (where `pendingBytes` runs ahead of `unsentBytes`); and `sentBytes` is the rest
        /// of what was written, growing as the peer reads.
        @Test func hasUnsentBytesOverAgreesWithUnsentBytes() throws {
            let server = try Server { _ in nil }
            let (client, connection) = try server.connectClient()
            let block = ByteBuffer(count: 1 << 20) { $0.initializeMemory(as: UInt8.self, repeating: 42) }
            var sawPendingAhead = false
            /// `unsent`, `pending`, and the limits where the two checks disagree (on the loop).
            func check() -> (unsent: Int, pending: Int, sent: UInt64, disagreeing: [Int]) {
                onLoop(server.loop) {
                    let sent = connection.sentBytes
                    let unsent = connection.unsentBytes
                    let pending = connection.pendingBytes
                    let limits = [0, unsent - 1, unsent, unsent + 1, pending - 1, pending, pending + 1]
                    let disagreeing = limits.filter { $0 >= 0 && connection.hasUnsentBytes(over: $0) != (unsent > $0) }
                    return (unsent, pending, sent, disagreeing)
                }
            }
            // More than the socket buffers hold: the kernel takes part, libuv queues the rest.
            onLoop(server.loop) { for _ in 0..<16 { connection.write(block) } }
            #expect(check().unsent > 1 << 20)
            var received = 0
            var lastSent: UInt64 = 0
            for _ in 0..<16 {
                let state = check()
                #expect(state.sent + UInt64(state.unsent) == 16 << 20)
                #expect(state.sent >= lastSent)
                lastSent = state.sent
                #expect(state.pending >= state.unsent)
                #expect(state.disagreeing == [], "unsent \(state.unsent), pending \(state.pending)")
                if state.pending > state.unsent { sawPendingAhead = true }
                received += client.readBytes(count: 1 << 20).count
            }
            #expect(received == 16 << 20)
            #expect(eventually { onLoop(server.loop) { connection.pendingBytes } == 0 })
            #expect(check().disagreeing == [])
            #expect(check().sent == 16 << 20)
            #expect(sawPendingAhead, "never saw a write libuv had partly handed to the kernel")
            #expect(server.stop() == 0)
        }

        /// `acknowledgedBytes` is what the peer has read into its socket: below `sentBytes` while
        /// the kernel holds output for it, growing as it reads, all of it in the end.
        @Test func acknowledgedBytesGrowAsThePeerReads() throws {
            let server = try Server { _ in nil }
            let (client, connection) = try server.connectClient()
            let block = ByteBuffer(count: 1 << 20) { $0.initializeMemory(as: UInt8.self, repeating: 7) }
            onLoop(server.loop) { for _ in 0..<16 { connection.write(block) } }
            #expect(eventually { onLoop(server.loop) { connection.sentBytes } > 0 })
            let (sent, acknowledged) = onLoop(server.loop) { (connection.sentBytes, connection.acknowledgedBytes) }
            #expect(acknowledged < sent, "the kernel holds output the peer has not read: \(acknowledged) of \(sent)")
            #expect(client.readBytes(count: 1 << 20).count == 1 << 20)
            #expect(eventually { onLoop(server.loop) { connection.acknowledgedBytes } > acknowledged })
            #expect(client.readBytes(count: 15 << 20).count == 15 << 20)
            #expect(eventually { onLoop(server.loop) { connection.acknowledgedBytes } == 16 << 20 })
            #expect(server.stop() == 0)
        }

        @Test func aPeerClosingMidWriteRunsTheCloseHookOnce() throws {
            let hookRuns = Shared(0)
            let recorder = RecordingDelegate()
            let server = try Server { connection in
                connection.onClose { hookRuns.withLock { $0 += 1 } }
                // Far more than the socket buffers hold, so writes are in flight when the peer goes.
                let block = ByteBuffer(count: 1 << 20) { $0.initializeMemory(as: UInt8.self, repeating: 42) }
                for _ in 0..<64 { connection.write(block) }
                return recorder
            }
            let client = try BlockingTCPClient(port: server.port)
            #expect(client.readBytes(count: 100_000).count == 100_000)
            client.resetAndClose()
            #expect(eventually { hookRuns.current == 1 })
            let connection = server.accepted.current[0]
            // Closing again from either side does nothing more.
            connection.close()
            connection.closeAfterFlush(timeout: .seconds(1))
            #expect(onLoop(server.loop) { connection.pendingBytes } == 0)
            #expect(hookRuns.current == 1)
            #expect(recorder.record.current.closes == 1)
            let lateRuns = Shared(0)
            connection.onClose { lateRuns.withLock { $0 += 1 } }  // already closed: runs at once
            #expect(lateRuns.current == 1)
            #expect(server.stop() == 0)
        }

        /// A server that writes `count` patterned bytes to each connection, then closes it after
        /// a flush with `timeout`; and those bytes.
        private func flushingServer(writing count: Int, timeout: Duration) throws -> (Server, ByteBuffer) {
            let payload = ByteBuffer(count: count) { bytes in
                for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index) }
            }
            let server = try Server { connection in
                connection.write(payload)
                connection.closeAfterFlush(timeout: timeout)
                return nil
            }
            return (server, payload)
        }

        @Test func closeAfterFlushDeliversEverythingThenCloses() throws {
            let (server, payload) = try flushingServer(writing: 4 << 20, timeout: .seconds(10))
            let client = try BlockingTCPClient(port: server.port)
            let bytes = client.readBytesUntilClosed()
            #expect(client.streamEnd == .closed)
            #expect(bytes?.count == payload.count)
            #expect(bytes == payload.array)
            #expect(server.stop() == 0)
        }

        /// The timeout counts time in which the peer read nothing: one that reads slowly but
        /// steadily gets everything, however long that takes in all.
        @Test func closeAfterFlushWaitsForAPeerThatStillReads() throws {
            // Far more than the kernel's buffers take: most of it waits in the connection.
            let (server, payload) = try flushingServer(writing: 16 << 20, timeout: .milliseconds(500))
            let client = try BlockingTCPClient(port: server.port, receiveBufferSize: 4096)
            var bytes: [UInt8] = []
            // 16 reads 50 ms apart: longer than the timeout in all, never that long idle.
            for _ in 0..<16 {
                bytes += client.readBytes(count: 1 << 20)
                usleep(50_000)
            }
            bytes += client.readBytesUntilClosed() ?? []
            #expect(client.streamEnd == .closed)
            #expect(bytes.count == payload.count)
            #expect(bytes == payload.array)
            #expect(server.stop() == 0)
        }

        @Test func endOfInputFlushesRepliesBeforeClosing() throws {
            let recorder = RecordingDelegate(echo: true)
            let server = try Server { _ in recorder }
            let client = try BlockingTCPClient(port: server.port)
            try client.sendRaw("one\ntwo\n")
            client.shutdownWrite()
            let bytes = client.readBytesUntilClosed()
            #expect(client.streamEnd == .closed)
            #expect(bytes.map { String(decoding: $0, as: UTF8.self) } == "one\ntwo\n")
            #expect(eventually { recorder.record.current.closes == 1 })
            #expect(server.stop() == 0)
        }
    }
}

/// Records which call each line came through, in order (loop thread), for the test to read.
private final class FirstLineRecorder: LineReaderDelegate, @unchecked Sendable {
    let calls = Shared<[String]>([])

    func connection(_ connection: any ByteStream, didReadFirstLine line: UnsafeRawBufferPointer) {
        calls.withLock { $0.append("first " + String(decoding: line, as: UTF8.self)) }
    }

    func connection(_ connection: any ByteStream, didReadLine line: UnsafeRawBufferPointer) {
        calls.withLock { $0.append("line " + String(decoding: line, as: UTF8.self)) }
    }

    func connection(_ connection: any ByteStream, didDiscardLongLine byteCount: Int) {
        calls.withLock { $0.append("long \(byteCount)") }
    }
}
