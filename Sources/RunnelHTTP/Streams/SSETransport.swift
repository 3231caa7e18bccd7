import Runnel
import RunnelBytes
import RunnelCompression
import RunnelProtocol
import RunnelServer
import RunnelUV

/// A session carried by a Server-Sent Events response (`GET /events`, docs/protocol.md "The
/// HTTP front door"): the session gets one `sub` as a value (`SubscribeRequest`, which
/// `EventsRoute` makes from the query) and its output becomes the response. The reply, a value
/// (`SessionReply`), decides the answer: a failure is the HTTP error answer, the reply line its
/// body (the connection stays HTTP and the session ends); success makes this transport take
/// the connection over (`HTTPExchange.takeOver`) and write the
/// `text/event-stream` head. Then each `next` is `id: POS` (when it has a position, an
/// `EventPosition`) and `data: VALUE`, the value's bytes as published; `completed`, `error` and
/// `dropped` are named events written from their values (`SessionEvent`, `SSEFraming`), and
/// after a terminal one the response ends with the connection. `closing` ends it too. The
/// session's output comes as values (`SessionOutput`): no line is made for the stream. What
/// the client sends after its request is read and ignored, so its close is seen at once and
/// disposes the subscription (`transportDidEndInput`).
///
/// Heartbeat: an idle stream writes a comment line every `StreamHeartbeat.interval`.
///
/// Compression: when the request accepts gzip (and `compression` is on), the stream is one gzip
/// member written as it goes (`GzipEventStream`): each event flushed whole, a `next` event's
/// value compressed once for every stream it goes to (the front door's `SharedValueDeflate`),
/// the final block and trailer written when the stream ends.
///
/// Thread rules: loop thread only. Lifetime rule: before the take-over, the route's call
/// holds it; after, its connection (a `ByteStream`) holds it as delegate until it has closed, and it holds
/// its session until it has told it `transportDidClose()`.
final class SSETransport: SessionTransport, HTTPStream {
    private enum State {
        /// The `sub` is being handled: its reply answers `exchange`.
        case subscribing(HTTPExchange)
        /// The `sub` failed (its error answered the request), or the connection closed before
        /// its reply: the session is to end.
        case abandoned
        case streaming
        /// A terminal event was written or the connection is closing: nothing more is.
        case ended
    }

    private var state: State
    /// Inside `subscribe`: a failed reply given now ends the session once the session is done
    /// with the request; one that comes later (the owner asked, on another loop) ends it then.
    private var isSubscribing = false
    /// The connection, once taken over.
    private var connection: (any ByteStream)?
    private unowned let frontDoor: HTTPFrontDoor
    private var receiver: (any RequestReceiver)?
    let maxRequestBytes: Int
    let peerDescription: String
    let transportName = "sse"
    private var heartbeat = StreamHeartbeat()
    /// The gzip stream the response is, when the client accepts gzip.
    private var gzip: GzipEventStream?
    /// `ts=true`: a `next` event's `data:` is an object, `{"value":V,"ts":MS}` (with `pos`
    /// too when the line has it), the line's tail after `{"value":V`; else the value alone.
    private let wrapsValues: Bool

    init(exchange: HTTPExchange, frontDoor: HTTPFrontDoor, maxRequestBytes: Int, wrapsValues: Bool = false) {
        state = .subscribing(exchange)
        self.wrapsValues = wrapsValues
        self.frontDoor = frontDoor
        self.maxRequestBytes = maxRequestBytes
        peerDescription = exchange.peerDescription
    }

    /// Hands the session its one request, the stream's `sub`, as a value; it is measured as
    /// its line would be: one over `maxRequestBytes` is the line protocol's long line
    /// (`line_too_long`), one nested deeper than `maxDepth` that line's `bad_json`. Ends the
    /// session at once when the reply was an error (after the answer), since nothing is left
    /// for it to do.
    func subscribe(_ request: SubscribeRequest, maxDepth: Int) {
        isSubscribing = true
        defer { isSubscribing = false }
        let line = request.line()
        if line.count > maxRequestBytes {
            receiver?.transportDidDiscardLongRequest(byteCount: line.count)
        } else {
            receiver?.transportDidReceive(
                subscription: request, lineByteCount: line.count,
                lineProblem: request.lineProblem(line, maxDepth: maxDepth))
        }
        guard case .abandoned = state else { return }
        endSession()
    }

    private func endSession() {
        let receiver = self.receiver
        self.receiver = nil
        receiver?.transportDidClose()
    }

    /// One sweep of the front door: a heartbeat when the stream has been idle long enough.
    func tick() {
        guard case .streaming = state, let connection, heartbeat.tick() else { return }
        send((":\n" as StaticString).rawBytes, on: connection)
    }

    /// Whether the stream is gzip'd.
    var isCompressed: Bool { gzip != nil }

    /// Queues `bytes`, as stored blocks in a gzip'd stream.
    private func send(_ bytes: UnsafeRawBufferPointer, on connection: any ByteStream) {
        guard gzip != nil else { return _ = connection.write(copying: bytes) }
        gzip?.write(bytes, on: connection)
    }

    /// Ends the stream (after its last event): a gzip'd one with its final block and trailer,
    /// then the connection closes once its output is written.
    private func end(_ connection: any ByteStream, timeout: Duration) {
        state = .ended
        gzip?.finish(on: connection)
        connection.closeAfterFlush(timeout: timeout)
    }

    // MARK: SessionTransport

    func start(receiver: any RequestReceiver) { self.receiver = receiver }

    /// The `sub`'s reply answers the request (`answer`); a terminal or `dropped` event is
    /// written from the value (`SSEFraming.event`), after a terminal one the response ends with
    /// the connection; `closing` ends it too, saying why (`SSEFraming.closing`). Returns the
    /// event bytes written.
    func write(_ output: SessionOutput) -> Int {
        switch output {
        case .reply(let reply):
            answer(reply)
            return 0
        case .event(let event, _, _):
            guard case .streaming = state, let connection else { return 0 }
            heartbeat.noteOutput()
            let framed = SSEFraming.event(event)
            framed.withUnsafeBytes { send($0, on: connection) }
            if event.isTerminal { end(connection, timeout: HTTPConnection.closeTimeout) }
            return framed.count
        case .closing(let reason):
            if case .subscribing(let exchange) = state {
                // Before the `sub`'s reply: the request is answered as an internal error.
                state = .abandoned
                var line = ServerLineWriter.line(for: output)
                exchange.answer(.json(line.finish(), status: HTTPStatus(reporting: .eval)))
                return 0
            }
            guard case .streaming = state, let connection else { return 0 }
            heartbeat.noteOutput()
            let framed = SSEFraming.closing(reason)
            framed.withUnsafeBytes { send($0, on: connection) }
            end(connection, timeout: HTTPConnection.closeTimeout)
            return framed.count
        }
    }

    /// The `sub`'s reply answers the request: its error as the HTTP answer, with the status
    /// for its code and the reply's line as the body, or the stream's head. A stream has no
    /// other request, so no other reply.
    private func answer(_ reply: SessionReply) {
        guard case .subscribing(let exchange) = state else { return }
        switch reply.outcome {
        case .failed(let error):
            state = .abandoned
            // The session counted the request error already; the answer counts by status.
            var line = ServerLineWriter.reply(reply)
            exchange.answer(.json(line.finish(), status: HTTPStatus(reporting: error.code)))
            if !isSubscribing { endSession() }
        case .subscribed:
            startStream(answering: exchange)
        case .done, .published, .subjects, .stats:
            break
        }
    }

    /// Takes the connection over and writes the stream's head.
    private func startStream(answering exchange: HTTPExchange) {
        var head = HTTPResponse.stream(contentType: "text/event-stream")
        head.fields.append(("Cache-Control", "no-cache"))
        head.fields += exchange.corsFields
        head = frontDoor.encode(head, answering: exchange.head)
        let taken = exchange.takeOver { connection in
            self.connection = connection
            return self
        }
        guard let connection = taken?.connection else {
            state = .abandoned
            return
        }
        state = .streaming
        frontDoor.count(head)
        head.write(to: connection, closing: true)
        if head.isGzipped {
            gzip = GzipEventStream()
            gzip?.start(on: connection)
        }
    }

    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        guard wrapsValues else { return writeEvent(value: value, position: nil, unlessUnsentOver: limit) }
        return writeWrapped(value, tail: tail, position: nil, unlessUnsentOver: limit)
    }

    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        position: EventPosition, unlessUnsentOver limit: Int
    ) -> Bool {
        guard wrapsValues else { return writeEvent(value: value, position: position, unlessUnsentOver: limit) }
        return writeWrapped(value, tail: tail, position: position, unlessUnsentOver: limit)
    }

    func writeNext(
        head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        guard wrapsValues else { return writeEvent(sharedValue: value, position: nil, unlessUnsentOver: limit) }
        return writeWrapped(value.bytes, tail: tail, position: nil, unlessUnsentOver: limit)
    }

    func writeNext(
        head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer,
        position: EventPosition, unlessUnsentOver limit: Int
    ) -> Bool {
        guard wrapsValues else { return writeEvent(sharedValue: value, position: position, unlessUnsentOver: limit) }
        return writeWrapped(value.bytes, tail: tail, position: position, unlessUnsentOver: limit)
    }

    /// A map's `next` event: `data:` is `{"key":K,"value":V}` (with the tail's `pos` and `ts`
    /// too under `wrapsValues`), `id:` its position.
    func writeKeyedNext(
        head: UnsafeRawBufferPointer, key: ByteBuffer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        position: EventPosition?, unlessUnsentOver limit: Int
    ) -> Bool {
        writeWrapped(
            value, tail: wrapsValues ? tail : ("}" as StaticString).rawBytes, key: key, position: position,
            unlessUnsentOver: limit)
    }

    /// A `next` event whose `data:` is `{"value":` `value` `tail` (`wrapsValues`), or with a
    /// map's `"key":K,` first, put together once (streams asking for times, and maps, are not
    /// the hot path).
    private func writeWrapped(
        _ value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer, key: ByteBuffer? = nil,
        position: EventPosition?, unlessUnsentOver limit: Int
    ) -> Bool {
        var data = Array("{".utf8)
        if let key {
            data += "\"key\":".utf8
            data += key.bytes
            data += ",".utf8
        }
        data += "\"value\":".utf8
        data.reserveCapacity(data.count + value.count + tail.count)
        data += value
        data += tail
        return data.withUnsafeBytes { writeEvent(value: $0, position: position, unlessUnsentOver: limit) }
    }

    /// A `next` event from its value and position (the line's head and tail are not read):
    /// `id: POS` when it has one, `data: VALUE`, the empty line.
    @inline(__always)
    private func writeEvent(
        value: UnsafeRawBufferPointer, position: EventPosition?, unlessUnsentOver limit: Int
    ) -> Bool {
        guard let connection else { return true }
        guard !connection.hasUnsentBytes(over: limit) else { return false }
        heartbeat.noteOutput()
        if gzip != nil {
            SSEFraming.withFields(before: position) { fields in
                if SSEFraming.hasLineBreak(value) {
                    SSEFraming.withoutLineBreaks(value).withUnsafeBytes { writeCompressed(fields, $0, connection) }
                } else {
                    writeCompressed(fields, value, connection)
                }
            }
            return true
        }
        let newline = ("\n" as StaticString).rawBytes
        SSEFraming.withFields(before: position) { fields in
            if SSEFraming.hasLineBreak(value) {
                SSEFraming.withoutLineBreaks(value).withUnsafeBytes {
                    _ = connection.writeLine(copying: fields, $0, newline)
                }
            } else {
                connection.writeLine(copying: fields, value, newline)
            }
        }
        return true
    }

    /// A large value is written by reference, as on TCP.
    private func writeEvent(
        sharedValue value: ByteBuffer, position: EventPosition?, unlessUnsentOver limit: Int
    ) -> Bool {
        guard let connection, gzip == nil, !SSEFraming.hasLineBreak(value.bytes) else {
            return writeEvent(value: value.bytes, position: position, unlessUnsentOver: limit)
        }
        guard !connection.hasUnsentBytes(over: limit) else { return false }
        heartbeat.noteOutput()
        SSEFraming.withFields(before: position) { _ = connection.write(copying: $0) }
        connection.write(value)
        connection.write(copying: ("\n\n" as StaticString).rawBytes)
        return true
    }

    /// A `next` event in the gzip stream, its value compressed once for every stream.
    private func writeCompressed(
        _ fields: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, _ connection: any ByteStream
    ) {
        let blocks = frontDoor.sharedDeflate.blocks(of: value, windowBits: 15)
        gzip?.writeNext(fields: fields, value: blocks, tail: ("\n\n" as StaticString).rawBytes, on: connection)
    }

    func hasUnsentBytes(over limit: Int) -> Bool { connection?.hasUnsentBytes(over: limit) ?? false }
    var unsentBytes: Int { connection?.unsentBytes ?? 0 }
    var sentBytes: UInt64 { connection?.sentBytes ?? 0 }
    var acknowledgedBytes: UInt64 { connection?.acknowledgedBytes ?? 0 }
    func pauseInput() { connection?.stopReading() }
    func resumeInput() { connection?.startReading() }

    func whenUnsentBytes(fallTo threshold: Int, _ action: @escaping () -> Void) {
        guard let connection else { return action() }
        connection.whenUnsentBytes(fallTo: threshold, action)
    }

    func closeAfterFlush(timeout: Duration) {
        let wasStreaming = if case .streaming = state { true } else { false }
        state = .ended
        guard let connection else {
            // Not taken over: nothing of the session's is on the connection; the session ends.
            return endSession()
        }
        guard wasStreaming else { return connection.closeAfterFlush(timeout: timeout) }
        end(connection, timeout: timeout)
    }

    // MARK: ByteStreamDelegate (after the take-over)

    /// The client's bytes after its request mean nothing to the stream.
    func connection(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {}

    func connectionDidEndInput(_ connection: any ByteStream) { receiver?.transportDidEndInput() }

    func connectionDidClose(_ connection: any ByteStream) {
        state = .ended
        frontDoor.streamDidClose(self)
        endSession()
    }
}
