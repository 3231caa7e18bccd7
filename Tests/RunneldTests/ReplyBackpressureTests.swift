import Foundation
import RunnelTestSupport
import Testing

/// Replies count toward `max_pending_bytes` too: a client that pipelines requests and does not
/// read their replies has its input paused (the kernel then pushes back on its sends) until it
/// reads, and then every request is answered, in order.
@Suite struct ReplyBackpressureTests {
    @Test func pipelinedRequestsPauseInputUntilTheClientReads() throws {
        var config = RunneldConfig()
        config.maxPendingBytes = 65_536
        let server = try RunneldProcess(config: config)
        let client = try server.connect(receiveBufferSize: 4096)
        var size: Int32 = 16_384
        setsockopt(client.descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))

        // 20,000 pings whose replies echo a 1000-byte ref: 20 MB each way, far more than the
        // kernel's socket buffers on both sides can absorb while the server does not read.
        let count = 20_000
        let padding = String(repeating: "p", count: 992)
        let requests = Array(
            (0..<count).map { #"{"op":"ping","ref":"\#(padding)\#(String(format: "%08d", $0))"}"# + "\n" }.joined().utf8
        )

        // Send without reading until the sends stall: the server has stopped reading.
        var sent = 0
        var stalled = false
        var blockedSince: ContinuousClock.Instant?
        while sent < requests.count {
            let n = requests[sent...].withUnsafeBytes {
                send(client.descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if n > 0 {
                sent += n
                blockedSince = nil
                continue
            }
            #expect(errno == EAGAIN || errno == EWOULDBLOCK, "send failed: errno \(errno)")
            let since = blockedSince ?? ContinuousClock.now
            blockedSince = since
            if ContinuousClock.now - since > .milliseconds(300) {
                stalled = true
                break
            }
            pollPause(.milliseconds(5))
        }
        #expect(stalled, "the server read all \(requests.count) bytes of requests while no reply was read")

        // Now read, sending the rest as the socket allows: every reply arrives, in order.
        var received = 0
        let deadline = Deadline(.seconds(60))
        while received < count && !deadline.hasPassed {
            if sent < requests.count {
                let n = requests[sent...].withUnsafeBytes {
                    send(client.descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
                }
                if n > 0 { sent += n }
            }
            _ = pollReadable([client], timeout: .milliseconds(10))
            while let line = client.bufferedLine() {
                let expected = #"{"ok":true,"ref":"\#(padding)\#(String(format: "%08d", received))"}"#
                if line != expected {
                    Issue.record("reply \(received): \(line.prefix(120))")
                    return
                }
                received += 1
            }
            if client.isClosedByPeer { break }
        }
        #expect(received == count)
        #expect(try client.request(#"{"op":"ping","ref":"end"}"#) == ["ok": true, "ref": "end"])
    }
}
