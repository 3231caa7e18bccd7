import RunnelBytes

/// A connection's bytes both ways, as the protocols above the socket see them (HTTP, SSE,
/// WebSocket): input delivered to a `ByteStreamDelegate` as read, output queued by copy or by
/// reference and written once per loop turn, and a close, abrupt or after the output.
/// `TCPConnection` is one, filtered (TLS) or not: the filter is below this interface.
///
/// Thread rules: `close()`, `closeAfterFlush(timeout:)` and `onClose(_:)` from any thread;
/// everything else on the stream's loop thread, where its delegate is called. Lifetime rule:
/// an open stream lives until it has closed, holding its delegate until `connectionDidClose`.
public protocol ByteStream: AnyObject {
    /// Receives the input (loop thread); held strongly until the stream has closed.
    var delegate: (any ByteStreamDelegate)? { get set }
    /// The peer's address, "host:port" or "[v6-host]:port" (empty if unknown).
    var remoteAddress: String { get }
    /// Whether the stream is open for writing (not closing, closed, or draining).
    var isOpen: Bool { get }
    /// Bytes accepted by a write and not yet handed to the kernel.
    var pendingBytes: Int { get }
    /// Bytes written and not yet taken by the kernel: queued here or in libuv.
    var unsentBytes: Int { get }
    /// Bytes the kernel has taken since the stream opened: grows while the peer reads.
    var sentBytes: UInt64 { get }
    /// Bytes the peer has acknowledged since the stream opened (`TCPConnection`'s): they grow
    /// while the peer reads, also while the kernel takes no more from the stream.
    var acknowledgedBytes: UInt64 { get }
    /// Whether `unsentBytes` is over `limit` (cheaper than reading it).
    func hasUnsentBytes(over limit: Int) -> Bool
    /// Runs `action` once, as soon as `unsentBytes` is at most `threshold`.
    func whenUnsentBytes(fallTo threshold: Int, _ action: @escaping () -> Void)

    /// Queues a copy of `bytes`; false (dropping them) once the stream is not open.
    @discardableResult func write(copying bytes: UnsafeRawBufferPointer) -> Bool
    /// Queues copies of the four pieces, back to back.
    @discardableResult func write(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer
    ) -> Bool
    /// Queues copies of the four pieces unless `hasUnsentBytes(over: limit)`, which it returns
    /// false for (queuing nothing): a delivery's check and copy in one call.
    func write(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer, unlessUnsentOver limit: Int
    ) -> Bool
    /// Queues a copy of `bytes`, then a `\n`.
    @discardableResult func writeLine(copying bytes: UnsafeRawBufferPointer) -> Bool
    /// Queues copies of the three pieces, back to back, then a `\n`.
    @discardableResult func writeLine(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer
    ) -> Bool
    /// Queues `buffer` itself, without copying; it is kept alive until written.
    @discardableResult func write(_ buffer: ByteBuffer) -> Bool

    /// Delivers input to `delegate` (again).
    func startReading()
    /// Stops delivering input until `startReading()`.
    func stopReading()
    /// Closes now, dropping output not yet written.
    func close()
    /// Writes what is pending, then closes; closes anyway after `timeout`.
    func closeAfterFlush(timeout: Duration)
    /// Called by the delegate during `connectionDidEndInput`: the stream stays open past its
    /// end of input (where it would close after flushing), for the delegate to close it once
    /// the answers it still owes are written.
    func postponeCloseAtEndOfInput()
    /// Runs `hook` once when the stream closes (at once if it has).
    func onClose(_ hook: @escaping @Sendable () -> Void)
}

/// Receives a `ByteStream`'s input: the bytes as read, the end of the peer's input, the close.
///
/// Every method is called on the stream's loop thread. The bytes are valid only during the call
/// (they may point into the loop's read buffer): copy what must be kept. The stream holds its
/// delegate strongly until `connectionDidClose`, then lets it go.
public protocol ByteStreamDelegate: AnyObject {
    /// Bytes as read (after the filter, if any), while the stream is open.
    func connection(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer)
    /// The peer finished sending (a close or a half-close, which TCP does not tell apart).
    /// The stream then flushes what is pending, for at most its linger, and closes.
    func connectionDidEndInput(_ connection: any ByteStream)
    /// The stream closed (either side, or an error). Called once, last.
    func connectionDidClose(_ connection: any ByteStream)
}

extension ByteStreamDelegate {
    public func connectionDidEndInput(_ connection: any ByteStream) {}
    public func connectionDidClose(_ connection: any ByteStream) {}
}
