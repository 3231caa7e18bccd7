import RunnelServer
import RunnelUV

/// A response that takes its connection over for as long as the connection lasts: an event
/// stream (`SSETransport`) or a WebSocket (`WebSocketTransport`). From the hand-over
/// (`HTTPExchange.takeOver`) it is the connection's delegate, the front door counts it no
/// more as HTTP (its session counts it), and the server's sweep ticks it.
///
/// Thread rules: loop thread only.
protocol HTTPStream: ByteStreamDelegate {
    /// `"sse"` or `"websocket"`.
    var transportName: String { get }
    /// Whether its output is compressed (gzip, permessage-deflate).
    var isCompressed: Bool { get }
    /// One sweep of the server's, once a second (`ServerSweep.interval`).
    func tick()
}

/// When an idle stream sends something to show it is alive (an SSE comment, a WebSocket
/// ping): once every `interval` without output, counted in the server's sweeps, so an
/// idle stream needs no timer of its own. A value type, owned by its stream.
struct StreamHeartbeat {
    static let interval: Duration = .seconds(15)
    /// Idle sweeps before a heartbeat: one less than the interval's seconds, since the last
    /// write may have come just after a sweep.
    static let idleTicks = Int(interval / ServerSweep.interval) - 1

    private var wroteSinceTick = false
    private var idleTicks = 0

    /// The stream wrote something.
    @inline(__always)
    mutating func noteOutput() { wroteSinceTick = true }

    /// One sweep; whether a heartbeat is due now.
    mutating func tick() -> Bool {
        if wroteSinceTick {
            wroteSinceTick = false
            idleTicks = 0
            return false
        }
        idleTicks += 1
        guard idleTicks >= Self.idleTicks else { return false }
        idleTicks = 0
        return true
    }
}
