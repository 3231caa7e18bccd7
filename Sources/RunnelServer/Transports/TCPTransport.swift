import RunnelUV

/// The line protocol over one `TCPConnection`: requests are the connection's lines
/// (`LineFramer`), server lines go out with a `\n` after each. The only server type that
/// touches `TCPConnection`.
///
/// Thread rules: loop thread only (libuv calls it there). Lifetime rule: the connection holds
/// this transport as its delegate until it has closed; the transport holds its receiver until
/// then, and lets it go after `transportDidClose()`.
final class TCPTransport: SessionTransport, TCPConnectionDelegate {
    let connection: TCPConnection
    /// The session; set by the server before reading starts.
    var receiver: (any RequestReceiver)?
    private let stats: ServerStats

    init(connection: TCPConnection, stats: ServerStats) {
        self.connection = connection
        self.stats = stats
    }

    func start(receiver: any RequestReceiver) {
        self.receiver = receiver
        connection.delegate = self
        connection.startReading()
    }

    // MARK: SessionTransport

    func writeLine(_ line: UnsafeRawBufferPointer) {
        stats.bytesOut &+= UInt64(line.count + 1)
        connection.writeLine(copying: line)
    }

    @inline(__always)
    func writeNext(head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer) {
        stats.bytesOut &+= UInt64(head.count + value.count + tail.count + 1)
        connection.writeLine(copying: head, value, tail)
    }

    func writeNext(head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer) {
        stats.bytesOut &+= UInt64(head.count + value.count + tail.count + 1)
        connection.write(copying: head)
        connection.write(value)
        connection.writeLine(copying: tail)
    }

    @inline(__always)
    func hasUnsentBytes(over limit: Int) -> Bool { connection.hasUnsentBytes(over: limit) }
    var unsentBytes: Int { connection.unsentBytes }
    func pauseInput() { connection.stopReading() }
    func resumeInput() { connection.startReading() }

    func whenUnsentBytes(fallTo threshold: Int, _ action: @escaping () -> Void) {
        connection.whenUnsentBytes(fallTo: threshold, action)
    }

    func closeAfterFlush(timeout: Duration) { connection.closeAfterFlush(timeout: timeout) }
    var maxRequestBytes: Int { connection.configuration.maxLineLength }
    var peerDescription: String { connection.remoteAddress }

    // MARK: TCPConnectionDelegate

    func connection(_ connection: TCPConnection, didReadLine line: UnsafeRawBufferPointer) {
        stats.bytesIn &+= UInt64(line.count + 1)
        receiver?.transportDidReceive(request: line)
    }

    func connection(_ connection: TCPConnection, didDiscardLongLine byteCount: Int) {
        stats.bytesIn &+= UInt64(byteCount)
        receiver?.transportDidDiscardLongRequest(byteCount: byteCount)
    }

    /// End of input is the client going away (a close and a half-close look alike): its
    /// subscriptions are disposed at once; replies already written still drain before the close.
    func connectionDidEndInput(_ connection: TCPConnection) {
        receiver?.transportDidEndInput()
    }

    func connectionDidClose(_ connection: TCPConnection) {
        let receiver = self.receiver
        self.receiver = nil
        receiver?.transportDidClose()
    }
}

extension Server {
    /// Serves the line protocol on `listener`: each accepted connection becomes a session.
    public func serve(_ listener: TCPListener) {
        listener.onAccept = { [self] connection in accept(TCPTransport(connection: connection, stats: stats)) }
    }
}
