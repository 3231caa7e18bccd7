import Runnel
import RunnelTestSupport
import RunnelUV
import Testing

extension RunnelUVTests {
    @Suite struct TCPClientTests {
        @Test func aConnectedClientReadsEchoedLines() throws {
            let loop = EventLoop.started()
            let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: loop)
            let echo = RecordingDelegate(echo: true)
            listener.onAccept = { connection in
                connection.readLines(into: echo)
                connection.startReading()
            }
            let received = RecordingDelegate()
            let client = Shared<TCPConnection?>(nil)
            let connected = Waiter()
            loop.scheduler.performAsCurrent {
                _ = TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).subscribeNext {
                    connection in
                    client.withLock { $0 = connection }
                    connected.signal()
                }
            }
            #expect(connected.wait())
            let connection = try #require(client.current)
            loop.scheduler.schedule {
                connection.readLines(into: received)
                connection.startReading()
            }
            loop.scheduler.schedule {
                for text in ["alpha", "beta"] {
                    _ = Array(text.utf8).withUnsafeBytes { connection.writeLine(copying: $0) }
                }
            }
            #expect(eventually { received.lines == ["alpha", "beta"] })
            connection.close()
            #expect(eventually { received.record.current.closes == 1 })
            client.withLock { $0 = nil }
            #expect(loop.shutdown() == 0)
        }

        @Test func connectingToAClosedPortFails() {
            let loop = EventLoop.started()
            let failure = Shared<UVError?>(nil)
            let done = Waiter()
            // Bind then close a listener, so the port is known to be free.
            let port = onLoop(loop) { () -> Int in
                let listener = try! TCPListener.bind(host: "127.0.0.1", port: 0, on: loop)
                listener.close()
                return listener.port
            }
            loop.scheduler.performAsCurrent {
                _ = TCPConnection.connect(host: "127.0.0.1", port: port, on: loop).subscribe(error: { error in
                    failure.withLock { $0 = error as? UVError }
                    done.signal()
                })
            }
            #expect(done.wait())
            #expect(failure.current?.name == "ECONNREFUSED")
            #expect(eventually { onLoop(loop) { loop.scheduler.liveHandleOwners } == 0 })
            #expect(loop.shutdown() == 0)
        }
    }
}
