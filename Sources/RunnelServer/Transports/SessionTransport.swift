import Runnel
import RunnelBytes
import RunnelProtocol
import RunnelUV

/// What a session writes its lines to and controls its client through: one client
/// connection, whatever carries it: TCP lines (`TCPTransport`), WebSocket messages
/// (`WebSocketTransport`) or a Server-Sent Events stream (`SSETransport`).
///
/// A session hands over typed output: replies, events other than `next` and the `closing` line
/// as values (`write(_:)`, a `SessionOutput`), which each transport encodes (the line
/// protocols as lines, `ServerLineWriter.line(for:)`; SSE as events), so nothing is encoded
/// that a transport throws away. `next` events come through their own calls, in pieces, so the
/// hot path copies a small line once and writes a large value by reference, with the position
/// beside them as a value where the line has one.
///
/// The session counts `bytes_in` as the protocol's lines, and `bytes_out` as what the
/// transport says it wrote (`write(_:)` returns it; a `next` line counts as a line with its
/// line end): on TCP, the bytes on the wire.
///
/// Thread rules: loop thread only, like the session. Lifetime rule: the transport holds its
/// session (`RequestReceiver`) until it has told it `transportDidClose()`; the session holds
/// the transport for the rest of its life.
package protocol SessionTransport: AnyObject {
    /// Starts handing requests to `receiver`, which it holds until `transportDidClose()`.
    func start(receiver: any RequestReceiver)

    /// Delivers `message` to `sink`'s subscription, which its session writes through this
    /// transport (`Session.deliverNext`): the default, compiled for each transport's type, is
    /// what an `EventSink` calls.
    func deliver(_ message: Message, through sink: EventSink)

    /// Queues `output`, encoded as this transport frames it, and returns the bytes it counts in
    /// `bytes_out`: a line and its line end on TCP and WebSocket, an SSE event's fields; 0 for
    /// what it does not write as the protocol's output (an SSE stream's HTTP answer). A
    /// transport that ends its stream its own way reads the `closing` reason (a WebSocket's
    /// close code, the end of an SSE stream).
    func write(_ output: SessionOutput) -> Int

    /// Queues one `next` event line made of `head`, `value` and `tail`, all copied (small
    /// values, the common case), unless the output not yet handed to the kernel is over
    /// `limit` bytes: then it writes nothing and returns false. One call per delivery, so the
    /// check and the write cost one dispatch.
    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool

    /// The same for a `next` event line whose `value` is large: written by reference where
    /// the transport can, `head` and `tail` copied.
    func writeNext(
        head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool

    /// The same for a `next` line with a position (its `tail` encodes `position`): a transport
    /// that frames positions its own way (an SSE `id:`) takes the value.
    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        position: EventPosition, unlessUnsentOver limit: Int
    ) -> Bool

    /// The same for a large value with a position.
    func writeNext(
        head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer,
        position: EventPosition, unlessUnsentOver limit: Int
    ) -> Bool

    /// A map's `next` event (version 1.3), its value copied: `head` names the key, which `key`
    /// is as a JSON string. The line protocols write `head`, `value` and `tail` (the default);
    /// a transport that frames values its own way (SSE) puts the key beside the value.
    func writeKeyedNext(
        head: UnsafeRawBufferPointer, key: ByteBuffer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        position: EventPosition?, unlessUnsentOver limit: Int
    ) -> Bool

    /// Whether the output not yet handed to the kernel is over `limit` bytes.
    func hasUnsentBytes(over limit: Int) -> Bool

    /// The output not yet handed to the kernel, in bytes (for logs).
    var unsentBytes: Int { get }

    /// Bytes the kernel has taken from this connection since it opened: grows while the client
    /// reads, but only in steps (the kernel takes more once a third of its send buffer is
    /// free); cheap, so what an event over the soft limit asks of a stalled connection.
    var sentBytes: UInt64 { get }

    /// Bytes of this connection's output the client has acknowledged since it opened
    /// (`ByteStream.acknowledgedBytes`): they grow while the client reads, however slowly,
    /// where `sentBytes` may stand still for as long as it takes to read a third of a send
    /// buffer of megabytes (what tells a reader from one that has stopped, at each look at a
    /// lag's progress and over a grace). One system call.
    var acknowledgedBytes: UInt64 { get }

    /// Stops handing over requests until `resumeInput()`; the peer is pushed back on.
    func pauseInput()
    func resumeInput()

    /// Runs `action` once, as soon as the unsent output is at most `threshold` bytes (at once
    /// if it is); a new call replaces a waiting one, and closing drops it.
    func whenUnsentBytes(fallTo threshold: Int, _ action: @escaping () -> Void)

    /// Refuses further output and input, writes what is queued, then closes; closes anyway
    /// after `timeout`. The session then gets `transportDidClose()`.
    func closeAfterFlush(timeout: Duration)

    /// Called when the client's input ends while replies are still owed (held behind a reply
    /// that waits for the disk or the cluster): the transport stays open until
    /// `closeAfterEndOfInput()`, so a client that half-closes (`nc -q`) still gets them.
    /// Nothing for transports whose end of input is the client gone (WebSocket, SSE).
    func keepOpenPastEndOfInput()
    /// The owed replies are written: closes as the end of input would have.
    func closeAfterEndOfInput()

    /// The longest request the transport hands over; longer ones are reported with
    /// `transportDidDiscardLongRequest` (the `line_too_long` message names it).
    var maxRequestBytes: Int { get }

    /// Who is at the other end, for logs ("127.0.0.1:50312").
    var peerDescription: String { get }

    /// What carries the session, as metrics label connections: "tcp", "websocket", "sse".
    var transportName: String { get }
}

/// What a transport hands its client's requests to: a session. Every call is on the loop
/// thread, in the order the client sent.
package protocol RequestReceiver: AnyObject {
    /// One request, without its framing; its bytes are valid only during the call.
    func transportDidReceive(request: UnsafeRawBufferPointer)
    /// A `sub` made as a value on the client's behalf (`GET /events`' query), in place of a
    /// request line of `lineByteCount` bytes, or why that line would not parse
    /// (`lineProblem`): counted and answered as that line would be.
    func transportDidReceive(subscription: SubscribeRequest, lineByteCount: Int, lineProblem: ProtocolError?)
    /// A request over `maxRequestBytes` was thrown away as it arrived.
    func transportDidDiscardLongRequest(byteCount: Int)
    /// Answers, on `connection`, a first line (`line`) that is not the line protocol but a front
    /// door's (an HTTP request: `FrontDoor`), and closes it; false for a line of the protocol.
    func answer(toFirstLine line: UnsafeRawBufferPointer, on connection: any ByteStream) -> Bool
    /// The client sent its last request (or went away): nothing more will be delivered to it.
    func transportDidEndInput()
    /// The transport closed, from either side. Called once, last.
    func transportDidClose()
}

extension SessionTransport {
    package func keepOpenPastEndOfInput() {}
    package func closeAfterEndOfInput() {}

    /// The line protocols' map `next`: the line as it is, the key named in `head`.
    package func writeKeyedNext(
        head: UnsafeRawBufferPointer, key: ByteBuffer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        position: EventPosition?, unlessUnsentOver limit: Int
    ) -> Bool {
        guard let position else { return writeNext(head: head, value: value, tail: tail, unlessUnsentOver: limit) }
        return writeNext(head: head, value: value, tail: tail, position: position, unlessUnsentOver: limit)
    }

    /// For transports that write a position as the line's tail encodes it.
    @inline(__always)
    package func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        position: EventPosition, unlessUnsentOver limit: Int
    ) -> Bool {
        writeNext(head: head, value: value, tail: tail, unlessUnsentOver: limit)
    }

    @inline(__always)
    package func writeNext(
        head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer,
        position: EventPosition, unlessUnsentOver limit: Int
    ) -> Bool {
        writeNext(head: head, sharedValue: value, tail: tail, unlessUnsentOver: limit)
    }

    /// For transports that copy every line: the large value is copied like a small one.
    package func writeNext(
        head: UnsafeRawBufferPointer, sharedValue value: ByteBuffer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        writeNext(head: head, value: value.bytes, tail: tail, unlessUnsentOver: limit)
    }

    package func deliver(_ message: Message, through sink: EventSink) {
        sink.session.deliverNext(message, to: sink.subscription, through: self)
    }
}
