import Runnel
import RunnelUV

/// The line protocol over TCP: a `TCPConnection` is a session's transport as it is (requests
/// are its lines, framed by a `LineReader` in front of the session; server lines go out with a
/// `\n` after each), so delivering a value touches no object between the session and the
/// connection. With the listeners' accept code, the only server code that touches
/// `TCPConnection`; HTTP and its streams see a `ByteStream`.
///
/// Thread rules: loop thread only (libuv calls it there).
extension TCPConnection: SessionTransport {
    func start(receiver: any RequestReceiver) {
        readLines(into: TCPRequestReader(receiver: receiver))
        startReading()
    }

    func writeLine(_ line: UnsafeRawBufferPointer) { writeLine(copying: line) }

    @inline(__always)
    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        guard !hasUnsentBytes(over: limit) else { return false }
        writeLine(copying: head, value, tail)
        return true
    }

    func writeNext(
        head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        guard !hasUnsentBytes(over: limit) else { return false }
        write(copying: head)
        write(value)
        writeLine(copying: tail)
        return true
    }

    func makeEventSink(session: Session, subscription: SessionSubscription) -> any Subscriber<Message> {
        TCPEventSink(session: session, subscription: subscription, connection: self)
    }

    func pauseInput() { stopReading() }
    func resumeInput() { startReading() }
    var maxRequestBytes: Int { configuration.maxLineLength }
    var peerDescription: String { remoteAddress }
    var transportName: String { "tcp" }
}

/// Hands a connection's lines to its session as requests. Lifetime rule: the connection's
/// `LineReader` holds it until the connection has closed and lets it go then, which lets the session go (the
/// session holds the connection: the cycle ends there). `receiver` is a `let`, so a request
/// reaches the session without a retain and release around the call.
private final class TCPRequestReader: LineReaderDelegate {
    private let receiver: any RequestReceiver

    init(receiver: any RequestReceiver) { self.receiver = receiver }

    func connection(_ connection: any ByteStream, didReadLine line: UnsafeRawBufferPointer) {
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

/// A subscription's events for a session on TCP: the delivery path specialised for
/// `TCPConnection`, so a value reaches the socket's buffer through direct calls. Lifetime rule:
/// holds the session (which holds the connection) until the subscription is disposed.
private final class TCPEventSink: Subscriber, @unchecked Sendable {
    let session: Session
    let subscription: SessionSubscription
    let connection: TCPConnection

    init(session: Session, subscription: SessionSubscription, connection: TCPConnection) {
        self.session = session
        self.subscription = subscription
        self.connection = connection
    }

    func sendNext(_ value: Message) { session.deliverNext(value, to: subscription, through: connection) }
    func sendError(_ error: any Error) { session.deliverTerminal(error, to: subscription) }
    func sendCompleted() { session.deliverTerminal(nil, to: subscription) }
    func didSubscribe(with disposable: CompoundDisposable) {}
}

extension Server {
    /// Serves the line protocol on `listener`: each accepted connection becomes a session.
    public func serve(_ listener: TCPListener) {
        startSweep()
        listener.onAccept = { [self] connection in accept(connection) }
    }
}
