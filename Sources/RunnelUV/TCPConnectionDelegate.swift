/// Receives a `TCPConnection`'s input: the hot path for a server.
///
/// Every method is called on the loop thread. A line's bytes are valid only during the call
/// (they may point into the loop's read buffer): copy what must be kept. Lines come without
/// their `\n` and without a `\r` just before it. The connection holds its delegate strongly
/// until `connectionDidClose`, then lets it go.
public protocol TCPConnectionDelegate: AnyObject {
    /// One complete line arrived.
    func connection(_ connection: TCPConnection, didReadLine line: UnsafeRawBufferPointer)
    /// Bytes as read, for a connection whose configuration does not frame lines; valid only
    /// during the call (they point into the loop's read buffer).
    func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer)
    /// A line longer than the connection's maximum was thrown away as it streamed in;
    /// `byteCount` is its length (without the `\n`).
    func connection(_ connection: TCPConnection, didDiscardLongLine byteCount: Int)
    /// The peer finished sending (end of input: a close or a half-close, which TCP does not
    /// tell apart). The connection then flushes what is pending, for at most the configured
    /// linger, and closes.
    func connectionDidEndInput(_ connection: TCPConnection)
    /// The connection closed (either side, or an error). Called once, last.
    func connectionDidClose(_ connection: TCPConnection)
}

extension TCPConnectionDelegate {
    /// A line protocol's delegate is never given unframed bytes.
    public func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {}
    public func connection(_ connection: TCPConnection, didDiscardLongLine byteCount: Int) {}
    public func connectionDidEndInput(_ connection: TCPConnection) {}
    public func connectionDidClose(_ connection: TCPConnection) {}
}
