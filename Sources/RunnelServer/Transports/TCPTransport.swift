import Runnel
import RunnelBytes
import RunnelProtocol
import RunnelUV

/// The line protocol over TCP: the connection is a session's transport as it is (requests are
/// its lines, framed by a `LineReader` in front of the session; server lines go out with a
/// `\n` after each), so delivering a value touches no object between the session and the
/// connection, a `TCPConnection` of the session's loop, which gets the protocol's code
/// specialised for it. With the listeners' accept code, the only server code that touches
/// one; HTTP and its streams see a `ByteStream`.
///
/// Thread rules: loop thread only (libuv calls it there).
protocol LineTransport: SessionTransport, LineConnection {}

extension TCPConnection: LineTransport {}

extension LineTransport {
    package func start(receiver: any RequestReceiver) {
        readLines(into: TCPRequestReader(receiver: receiver))
        startReading()
    }

    package func write(_ output: SessionOutput) -> Int {
        var line = ServerLineWriter.line(for: output)
        let bytes = line.finish()
        bytes.withUnsafeBytes { _ = writeLine(copying: $0) }
        return bytes.count + 1
    }

    @inline(__always)
    package func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        guard !hasUnsentBytes(over: limit) else { return false }
        writeLine(copying: head, value, tail)
        return true
    }

    package func writeNext(
        head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        guard !hasUnsentBytes(over: limit) else { return false }
        write(copying: head)
        write(value)
        writeLine(copying: tail)
        return true
    }

    package func pauseInput() { stopReading() }
    package func resumeInput() { startReading() }
    package func keepOpenPastEndOfInput() { postponeCloseAtEndOfInput() }
    package func closeAfterEndOfInput() { closeAfterFlush(timeout: configuration.lingerAfterEndOfInput) }

    package var maxRequestBytes: Int { configuration.maxLineLength }
    package var peerDescription: String { remoteAddress }
    package var transportName: String { "tcp" }
}

/// Hands a connection's lines to its session as requests; a first line in a front door's
/// protocol (an HTTP request line: a browser or curl pointed at the line port) gets the front
/// door's answer instead, and the connection closes (`FrontDoor`). Lifetime rule: the connection's
/// `LineReader` holds it until the connection has closed and lets it go then, which lets the session go (the
/// session holds the connection: the cycle ends there). `receiver` is a `let`, so a request
/// reaches the session without a retain and release around the call.
private final class TCPRequestReader: LineReaderDelegate {
    private let receiver: any RequestReceiver

    init(receiver: any RequestReceiver) { self.receiver = receiver }

    func connection(_ connection: any ByteStream, didReadLine line: UnsafeRawBufferPointer) {
        receiver.transportDidReceive(request: line)
    }

    func connection(_ connection: any ByteStream, didReadFirstLine line: UnsafeRawBufferPointer) {
        guard !receiver.answer(toFirstLine: line, on: connection) else { return }
        receiver.transportDidReceive(request: line)
    }

    func connection(_ connection: any ByteStream, didDiscardLongLine byteCount: Int) {
        receiver.transportDidDiscardLongRequest(byteCount: byteCount)
    }

    /// End of input is the client going away (a close and a half-close look alike): its
    /// subscriptions are disposed at once; replies already written still drain before the close.
    func connectionDidEndInput(_ connection: any ByteStream) {
        receiver.transportDidEndInput()
    }

    func connectionDidClose(_ connection: any ByteStream) {
        receiver.transportDidClose()
    }
}

extension Server {
    /// Answers a first line in the front door's protocol (none without one).
    func answer(toFirstLine line: UnsafeRawBufferPointer, on connection: any ByteStream) -> Bool {
        frontDoor?.answer(toLinePortFirstLine: line, on: connection) ?? false
    }

    /// Makes each connection placed on this server's loop a session: what a listener spread
    /// over the process's loops hands it (`TCPListener.spread`). The caller has armed the
    /// server's sweep on its loop (`startSweep`).
    public var lineAcceptor: ConnectionAcceptor { { [self] connection in accept(connection) } }
}
