/// A transformation of a connection's byte stream underneath its framing and its delegate:
/// TLS (`RunnelTLS.TLSSession`), which the upper layers (line framing, HTTP, WebSocket, SSE)
/// never see.
///
/// `TCPConnection` calls it at most once per read and once per flush, never per line or per
/// write, so a connection without a filter pays one branch on each of those and nothing else.
/// Input: the bytes read from the socket go to `receive`, which hands the application bytes
/// they complete to its `deliver` closure. Output: the application bytes queued during a turn go
/// to `seal` at flush time (once `isEstablished`; until then they stay queued), and whatever the
/// filter has for the peer (handshake messages, sealed records, alerts, close_notify) is taken
/// with `takeOutput` and written to the socket as is.
///
/// Thread rules: loop thread only (the connection's). Lifetime rule: owned by one connection,
/// from before its first read until it is released when the connection closes.
public protocol ConnectionFilter: AnyObject {
    /// Whether application bytes can be sealed (the handshake has finished).
    var isEstablished: Bool { get }

    /// How long the handshake may take before the connection is closed.
    var handshakeTimeout: Duration { get }

    /// Takes `bytes` read from the peer and hands each run of application bytes they complete
    /// to `deliver`, which returns false to stop (the connection closed). `scratch` is memory
    /// the filter may decrypt into; `bytes` may lie inside it, so the filter must take all of
    /// `bytes` before writing there. The runs are valid only during each `deliver` call.
    func receive(
        _ bytes: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
        deliver: (UnsafeRawBufferPointer) -> Bool
    ) -> ConnectionFilterInput

    /// Seals application bytes for the wire; valid only once `isEstablished`. Returns false when
    /// the filter has failed (the connection must close).
    func seal(_ bytes: UnsafeRawBufferPointer) -> Bool

    /// Starts an orderly close: queues the filter's goodbye (TLS close_notify) as output.
    func finish()

    /// Bytes waiting to be written to the peer.
    var pendingOutputCount: Int { get }

    /// Moves up to `target.count` bytes of pending output into `target`; returns how many.
    func takeOutput(into target: UnsafeMutableRawBufferPointer) -> Int
}

/// What a filter made of the bytes it was given.
public enum ConnectionFilterInput: Equatable, Sendable {
    /// More may come.
    case open
    /// The peer ended its stream in an orderly way (TLS close_notify).
    case ended
    /// The stream is broken or hostile (bad handshake, bad record); `reason` says how. The
    /// filter may have queued an alert for the peer.
    case failed(reason: String)
}
