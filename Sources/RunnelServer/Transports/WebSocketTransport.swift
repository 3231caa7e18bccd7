import Runnel
import RunnelJSON
import RunnelUV

/// A session carried by a WebSocket (`GET /ws`, docs/protocol.md "The HTTP front door"): each
/// text message from the client is one request, each server line one text message. Frames
/// are read by a `WebSocketFrameReader`; frames go out as one unfragmented, unmasked frame a
/// line, the frame's head and the line copied into the connection's buffer in one write, a
/// large value by reference as on TCP.
///
/// Closing: the client's close frame is answered with its code, and ends the session's input;
/// a protocol violation is answered with the close code the contract names for it. When the
/// session closes the connection, the close frame says why: 1008 after its `closing` line
/// (`writeClosing`: a slow consumer, a token gone), else 1001 (the server is stopping). Each
/// ends with the connection's graceful close (`closeAfterFlush`), which sends the frames
/// queued before it.
///
/// Heartbeat: an idle WebSocket gets a ping every `StreamHeartbeat.interval`.
///
/// Thread rules: loop thread only. Lifetime rule: its `ByteStream` holds it as delegate until
/// it has closed; it holds its session until it has told it `transportDidClose()`; the session
/// holds it for the rest of its life.
final class WebSocketTransport: SessionTransport, HTTPStream, WebSocketFrameReaderDelegate {
    let connection: any ByteStream
    private unowned let frontDoor: HTTPFrontDoor
    private let reader: WebSocketFrameReader
    private var receiver: (any RequestReceiver)?
    /// The code of the close frame sent when the session closes the connection.
    private var closeCode = WebSocketCloseCode.goingAway
    private var hasSentClose = false
    private var heartbeat = StreamHeartbeat()
    let peerDescription: String
    let transportName = "websocket"

    init(connection: any ByteStream, frontDoor: HTTPFrontDoor, maxMessageBytes: Int) {
        self.connection = connection
        self.frontDoor = frontDoor
        reader = WebSocketFrameReader(maxMessageBytes: maxMessageBytes)
        peerDescription = connection.remoteAddress
        reader.delegate = self
    }

    var maxRequestBytes: Int { reader.maxMessageBytes }

    /// One sweep of the front door: a ping when the WebSocket has been idle long enough.
    func tick() {
        guard !hasSentClose, heartbeat.tick() else { return }
        writeFrame(.ping, payload: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// Queues one frame whose payload is `payload`.
    private func writeFrame(_ opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer) {
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        WebSocketFrameHead.withHead(opcode, length: payload.count) {
            _ = connection.write(copying: $0, payload, none, none)
        }
    }

    /// Queues a close frame with `code` and `reason` (cut to fit a control frame's 125 bytes),
    /// once; the graceful close then follows.
    private func sendClose(_ code: WebSocketCloseCode?, reason: String = "") {
        guard !hasSentClose else { return }
        hasSentClose = true
        guard let code else { return writeFrame(.close, payload: UnsafeRawBufferPointer(start: nil, count: 0)) }
        // Cut by characters: a reason must stay UTF-8.
        var reason = Substring(reason)
        while reason.utf8.count > 123 { reason.removeLast() }
        let payload = [UInt8(code.rawValue >> 8), UInt8(truncatingIfNeeded: code.rawValue)] + Array(reason.utf8)
        payload.withUnsafeBytes { writeFrame(.close, payload: $0) }
    }

    // MARK: SessionTransport

    func start(receiver: any RequestReceiver) { self.receiver = receiver }

    func makeEventSink(session: Session, subscription: SessionSubscription) -> any Subscriber<Message> {
        WebSocketEventSink(session: session, subscription: subscription, transport: self)
    }

    func writeLine(_ line: UnsafeRawBufferPointer) {
        heartbeat.noteOutput()
        writeFrame(.text, payload: line)
    }

    /// The session ends the connection, saying why: the close frame that follows says so too.
    func writeClosing(_ line: UnsafeRawBufferPointer, reason: ProtocolError) {
        closeCode = .policyViolation
        writeLine(line)
    }

    @inline(__always)
    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        let written = WebSocketFrameHead.withHead(.text, length: head.count &+ value.count &+ tail.count) {
            connection.write(copying: $0, head, value, tail, unlessUnsentOver: limit)
        }
        if written { heartbeat.noteOutput() }
        return written
    }

    func writeNext(
        head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        guard !connection.hasUnsentBytes(over: limit) else { return false }
        heartbeat.noteOutput()
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        WebSocketFrameHead.withHead(.text, length: head.count + value.count + tail.count) {
            _ = connection.write(copying: $0, head, none, none)
        }
        connection.write(value)
        connection.write(copying: tail)
        return true
    }

    func hasUnsentBytes(over limit: Int) -> Bool { connection.hasUnsentBytes(over: limit) }
    var unsentBytes: Int { connection.unsentBytes }
    var sentBytes: UInt64 { connection.sentBytes }

    func pauseInput() {
        reader.pause()
        connection.stopReading()
    }

    func resumeInput() {
        reader.resume()
        if !reader.isPaused { connection.startReading() }
    }

    func whenUnsentBytes(fallTo threshold: Int, _ action: @escaping () -> Void) {
        connection.whenUnsentBytes(fallTo: threshold, action)
    }

    func closeAfterFlush(timeout: Duration) {
        sendClose(closeCode)
        connection.closeAfterFlush(timeout: timeout)
    }

    // MARK: WebSocketFrameReaderDelegate

    /// A message may hold line breaks where a line cannot (JSON whitespace): they become
    /// spaces, so a value published here never splits a TCP subscriber's line.
    func frameReader(_ reader: WebSocketFrameReader, didReadText message: UnsafeRawBufferPointer) {
        guard let joined = OneLineJSON.joinedLines(message) else {
            receiver?.transportDidReceive(request: message)
            return
        }
        joined.withUnsafeBytes { receiver?.transportDidReceive(request: $0) }
    }

    func frameReader(_ reader: WebSocketFrameReader, didReadPing payload: UnsafeRawBufferPointer) {
        guard !hasSentClose else { return }
        writeFrame(.pong, payload: payload)
    }

    func frameReader(_ reader: WebSocketFrameReader, didReadClose code: WebSocketCloseCode?) {
        sendClose(code)
        receiver?.transportDidEndInput()
        connection.closeAfterFlush(timeout: HTTPConnection.closeTimeout)
    }

    func frameReader(_ reader: WebSocketFrameReader, didFail code: WebSocketCloseCode, reason: String) {
        frontDoor.webSocketDidFail(code: code, reason: reason, peer: peerDescription)
        sendClose(code, reason: reason)
        receiver?.transportDidEndInput()
        connection.closeAfterFlush(timeout: HTTPConnection.closeTimeout)
    }

    // MARK: ByteStreamDelegate (HTTPStream)

    func connection(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) { reader.read(bytes) }

    /// The client went away without a close frame.
    func connectionDidEndInput(_ connection: any ByteStream) { receiver?.transportDidEndInput() }

    func connectionDidClose(_ connection: any ByteStream) {
        frontDoor.streamDidClose(self)
        let receiver = self.receiver
        self.receiver = nil
        receiver?.transportDidClose()
    }
}

/// A subscription's events for a session on a WebSocket: the delivery path specialised for
/// `WebSocketTransport` (as `TCPEventSink` is for TCP), so a value reaches the connection's
/// buffer through direct calls. Lifetime rule: holds the session (which holds the transport)
/// until the subscription is disposed.
private final class WebSocketEventSink: Subscriber, @unchecked Sendable {
    let session: Session
    let subscription: SessionSubscription
    let transport: WebSocketTransport

    init(session: Session, subscription: SessionSubscription, transport: WebSocketTransport) {
        self.session = session
        self.subscription = subscription
        self.transport = transport
    }

    func sendNext(_ value: Message) { session.deliverNext(value, to: subscription, through: transport) }
    func sendError(_ error: any Error) { session.deliverTerminal(error, to: subscription) }
    func sendCompleted() { session.deliverTerminal(nil, to: subscription) }
    func didSubscribe(with disposable: CompoundDisposable) {}
}
