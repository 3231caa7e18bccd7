import Foundation
import Runnel
import RunnelTLS
import RunnelTestSupport
import RunnelUV
import Testing

extension RunnelUVTests {
    /// `TCPConnection` with a `TLSSession` as its filter at both ends (RunnelTLS's client and
    /// server roles), over a real loopback socket: what the upper layers write and read is the
    /// plaintext, whatever happens underneath.
    @Suite struct TLSFilterTests {
        @Test func linesWrittenBeforeAndAfterTheHandshakeArriveInOrderAndEchoBack() throws {
            let certificates = try TestCertificates()
            let server = try TLSContext.server(
                certificateFile: certificates.path("server.pem"), keyFile: certificates.path("server.key"))
            let client = try TLSContext.client(caFile: certificates.path("ca.pem"))
            let loop = EventLoop.started()
            let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: loop)
            let echo = RecordingDelegate(echo: true)
            onLoop(loop) {
                listener.makeFilter = { try server.makeSession() }
                listener.onAccept = { connection in
                    connection.readLines(into: echo)
                    connection.startReading()
                }
            }
            let received = RecordingDelegate()
            // A line past the early-flush threshold, sealed into many records each way.
            let big = String(repeating: "x", count: 300_000)
            let lines = (0..<1000).map { "line \($0)" } + [big, "last"]
            let connected = Waiter()
            let clientConnection = Shared<TCPConnection?>(nil)
            loop.scheduler.performAsCurrent {
                _ = TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).subscribeNext {
                    connection in
                    // Written at once: they wait for the handshake, queued, not lost.
                    connection.attach(filter: try! client.makeSession(serverName: "localhost"))
                    connection.readLines(into: received)
                    connection.startReading()
                    for line in lines {
                        _ = Array(line.utf8).withUnsafeBytes { connection.writeLine(copying: $0) }
                    }
                    clientConnection.withLock { $0 = connection }
                    connected.signal()
                }
            }
            #expect(connected.wait())
            #expect(eventually(timeout: .seconds(20)) { received.record.current.lines.count == lines.count })
            #expect(echo.lines == lines)
            #expect(received.lines == lines)
            // An orderly close from the client: close_notify, then the server ends too.
            clientConnection.current?.closeAfterFlush(timeout: .seconds(5))
            #expect(eventually { echo.record.current.closes == 1 && received.record.current.closes == 1 })
            clientConnection.withLock { $0 = nil }
            listener.close()
            #expect(loop.shutdown() == 0)
        }

        @Test func aClientThatDoesNotTrustTheServerIsClosedWithoutDeliveringAnything() throws {
            let certificates = try TestCertificates()
            let server = try TLSContext.server(
                certificateFile: certificates.path("server.pem"), keyFile: certificates.path("server.key"))
            // The client trusts an unrelated CA only.
            let client = try TLSContext.client(caFile: certificates.path("other-ca.pem"))
            let loop = EventLoop.started()
            let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: loop)
            let serverSide = RecordingDelegate()
            onLoop(loop) {
                listener.makeFilter = { try server.makeSession() }
                listener.onAccept = { connection in
                    connection.readLines(into: serverSide)
                    connection.startReading()
                }
            }
            let clientSide = RecordingDelegate()
            loop.scheduler.performAsCurrent {
                _ = TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).subscribeNext {
                    connection in
                    connection.attach(filter: try! client.makeSession(serverName: "localhost"))
                    connection.readLines(into: clientSide)
                    connection.startReading()
                    _ = Array("secret".utf8).withUnsafeBytes { connection.writeLine(copying: $0) }
                }
            }
            #expect(eventually { clientSide.record.current.closes == 1 && serverSide.record.current.closes == 1 })
            #expect(serverSide.lines.isEmpty && clientSide.lines.isEmpty)
            listener.close()
            #expect(loop.shutdown() == 0)
        }
    }
}
