import Runnel
import RunnelBytes
import RunnelCompression
import RunnelJSON
import RunnelProtocol
import RunnelServer
import RunnelUV
import RunnelWebSocket

/// A session carried by a WebSocket (`GET /ws`, docs/protocol.md "The HTTP front door"): each
/// text message from the client is one request, each server line one text message. Frames
/// are read by a `WebSocketFrameReader`; frames go out as one unfragmented, unmasked frame a
/// line, the frame's head and the line copied into the connection's buffer in one write, a
/// large value by reference as on TCP.
///
/// Closing: the client's close frame is answered with its code, and ends the session's input;
/// a protocol violation is answered with the close code the contract names for it. When the
/// session closes the connection, the close frame says why: 1008 after its `closing` line
/// (`write(.closing)`: a slow consumer, a token gone), else 1001 (the server is stopping). Each
/// ends with the connection's graceful close (`closeAfterFlush`), which sends the frames
/// queued before it.
///
/// Heartbeat: an idle WebSocket gets a ping every `StreamHeartbeat.interval`.
///
/// Compression: with permessage-deflate agreed (`PerMessageDeflateAgreement`), the reader
/// inflates the client's compressed messages and every text message out is compressed (RSV1
/// set; control frames never). With context takeover, by a deflater of this connection's own
/// that keeps its window from one message to the next; with `server_no_context_takeover`, by
/// the front door's `WebSocketSharedDeflate`, which compresses a delivered value once for all
/// such subscribers.
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
    /// What the client agreed for permessage-deflate; nil for uncompressed frames.
    private let compression: PerMessageDeflateAgreement?
    /// This connection's deflater, with context takeover; nil without compression or with
    /// `server_no_context_takeover` (then the front door's shared one serves).
    private let deflater: Deflater?
    let peerDescription: String
    let transportName = "websocket"

    init(
        connection: any ByteStream, frontDoor: HTTPFrontDoor, maxMessageBytes: Int,
        compression: PerMessageDeflateAgreement?
    ) {
        self.connection = connection
        self.frontDoor = frontDoor
        self.compression = compression
        if let compression, !compression.serverNoContextTakeover {
            deflater = Deflater.perConnection(maxWindowBits: compression.serverMaxWindowBits)
        } else {
            deflater = nil
        }
        reader = WebSocketFrameReader(
            maxMessageBytes: maxMessageBytes,
            inflater: compression.map { WebSocketInflater(resetsEachMessage: $0.clientNoContextTakeover) })
        peerDescription = connection.remoteAddress
        reader.delegate = self
    }

    var maxRequestBytes: Int { reader.maxMessageBytes }

    /// Whether permessage-deflate was agreed.
    var isCompressed: Bool { compression != nil }

    /// One sweep of the front door: a ping when the WebSocket has been idle long enough.
    func tick() {
        guard !hasSentClose, heartbeat.tick() else { return }
        writeFrame(.ping, payload: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// Queues one frame whose payload is `payload`: a text message compressed when agreed,
    /// unless not `compressing`.
    private func writeFrame(_ opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, compressing: Bool = true) {
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        if opcode == .text, compressing, let compression {
            let deflater = deflater ?? frontDoor.sharedDeflate.deflater(windowBits: compression.serverMaxWindowBits)
            return writeCompressed(deflater.compressFlushed(payload))
        }
        WebSocketFrameHead.withHead(opcode, length: payload.count) {
            _ = connection.write(copying: $0, payload, none, none)
        }
    }

    /// Queues one compressed text message: `flushed`, blocks ended by a sync flush, without
    /// the flush's last four bytes, `00 00 ff ff`, which the receiver adds back (RFC 7692, 7.2.1).
    private func writeCompressed(_ flushed: UnsafeRawBufferPointer) {
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        let payload = UnsafeRawBufferPointer(rebasing: flushed.dropLast(4))
        WebSocketFrameHead.withHead(.text, length: payload.count, compressed: true) {
            _ = connection.write(copying: $0, payload, none, none)
        }
    }

    /// A `next` line compressed, unless the output is over `limit` (then false, nothing sent).
    private func writeCompressedNext(
        _ compression: PerMessageDeflateAgreement, head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
        tail: UnsafeRawBufferPointer, unlessUnsentOver limit: Int
    ) -> Bool {
        guard !connection.hasUnsentBytes(over: limit) else { return false }
        heartbeat.noteOutput()
        if let deflater {
            writeCompressed(deflater.compressFlushed(head, value, tail))
        } else {
            writeCompressed(
                frontDoor.webSocketDeflate.compressNext(
                    head: head, value: value, tail: tail, windowBits: compression.serverMaxWindowBits))
        }
        return true
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

    /// Each output is one text message, its line. The `closing` line says the close frame that
    /// follows will say why, and goes uncompressed (RFC 7692 allows any message to): Node's
    /// WebSocket (undici) inflates asynchronously, and a compressed last message followed at
    /// once by the close frame and the end of the connection was lost to it, seen as a 1006
    /// without its reason.
    func write(_ output: SessionOutput) -> Int {
        var line = ServerLineWriter.line(for: output)
        let bytes = line.finish()
        heartbeat.noteOutput()
        var compressing = true
        if case .closing = output {
            closeCode = .policyViolation
            compressing = false
        }
        bytes.withUnsafeBytes { writeFrame(.text, payload: $0, compressing: compressing) }
        return bytes.count + 1
    }

    @inline(__always)
    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        if let compression {
            return writeCompressedNext(compression, head: head, value: value, tail: tail, unlessUnsentOver: limit)
        }
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
        if let compression {
            return writeCompressedNext(
                compression, head: head, value: value.bytes, tail: tail, unlessUnsentOver: limit)
        }
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
    var acknowledgedBytes: UInt64 { connection.acknowledgedBytes }

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
