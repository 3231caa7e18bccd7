import RunnelCompression
import RunnelUV

/// What the server core asks of a front door above it (RunnelHTTP's `HTTPFrontDoor`), which
/// accepts connections of its own beside the line port's sessions: the core names no front door,
/// so a front door depends on the core and never the other way.
///
/// Thread rules: loop thread only, the server's. Lifetime rule: the server holds its front door
/// (`Server.frontDoor`) for its life.
package protocol FrontDoor: AnyObject {
    /// Its open connections that are no session's (they count against `max_connections`).
    var connectionCount: Int { get }
    /// Its compressed streams open now.
    var compressionFigures: CompressionFigures { get }
    /// One sweep of the server's (`ServerSweep`), once a second: its own deadlines and ticks.
    func sweep(_ now: ContinuousClock.Instant)
    /// The server is stopping: every connection closes once its output is written, within
    /// `timeout`.
    func closeAllConnections(flushingWithin timeout: Duration)
    /// Whether the line port's first line on `connection` (`line`, without its end) is the front
    /// door's protocol rather than runnel's (a browser or curl given the wrong port): if so, the
    /// front door has answered it on `connection` and closes it; if not, it has done nothing.
    func answer(toLinePortFirstLine line: UnsafeRawBufferPointer, on connection: any ByteStream) -> Bool
}
