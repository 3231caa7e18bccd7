import CHTTPParser
import RunnelServer

/// What an `HTTPRequestParser` reports, request by request, in order. Called during
/// `consume(_:)`, on the thread that called it.
public protocol HTTPRequestParserDelegate: AnyObject {
    /// The first byte of a request arrived (the head's time limit starts).
    func parserDidBeginRequest()
    /// The head is complete and within the limits.
    func parserDidReadHead(_ head: HTTPRequestHead)
    /// A piece of the body (de-chunked), valid only during the call.
    func parserDidReadBody(_ bytes: UnsafeRawBufferPointer)
    /// The request is complete, body included; parsing pauses after it (`consume` returns
    /// `requestEnded`).
    func parserDidEndRequest()
}

/// Reads HTTP/1.1 requests from a byte stream with Node's http_parser (Debian's
/// `libhttp-parser-dev`; docs/decisions/0007-http-parser.md says why this library), adding the front
/// door's limits: a head of at most `maxHeadBytes` (`431`), a body of at most
/// `maxBodyBytes` (`413` with `limit`), and no request whose length is ambiguous (both
/// `Content-Length` and `Transfer-Encoding`, repeated `Content-Length`s, a `Transfer-Encoding`
/// that does not end in `chunked`: http_parser refuses them, reported as `400`), which is what
/// request smuggling through a proxy needs.
///
/// After each request `consume` stops and says how many bytes it took, so the connection
/// answers one request at a time and keeps the rest (pipelined requests) for later. After a
/// failure the parser takes no more input: the connection answers it and closes.
///
/// Thread rules: one thread at a time (the loop thread in the server). The delegate is held
/// unowned: its owner (the connection) owns the parser.
public final class HTTPRequestParser {
    /// The longest request head (request line and header fields), in bytes.
    public static let maxHeadBytes = 16 * 1024

    /// What one `consume(_:)` call came to.
    public enum Outcome: Equatable {
        /// Every byte was taken; the request goes on in later input.
        case needsMore
        /// A request ended after the first `consumed` bytes; the rest is the next request's.
        case requestEnded(consumed: Int)
        /// An upgrade request's head ended after `consumed` bytes: what follows is another
        /// protocol's, not HTTP.
        case upgraded(consumed: Int)
        /// The input is not an acceptable request.
        case failed(HTTPFailure)
    }

    public let maxBodyBytes: Int
    unowned let delegate: any HTTPRequestParserDelegate
    private let parser: UnsafeMutablePointer<http_parser>
    private let settings: UnsafeMutablePointer<http_parser_settings>
    /// The head read so far: the target, then each field's lower-cased name and value.
    private var headBytes: [UInt8] = []
    private var targetEnd = 0
    private var fields: [(name: Range<Int>, value: Range<Int>)] = []
    private var readingValue = false
    private var bodyBytes = 0
    /// Set by a callback that stops the parser with a failure of the front door's own.
    private var failure: HTTPFailure?

    /// http_parser's head limit is one setting for the process; it is the contract's.
    private static let headLimitSet: Void = http_parser_set_max_header_size(UInt32(maxHeadBytes))

    public init(maxBodyBytes: Int, delegate: any HTTPRequestParserDelegate) {
        _ = Self.headLimitSet
        self.maxBodyBytes = maxBodyBytes
        self.delegate = delegate
        parser = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_REQUEST)
        settings = .allocate(capacity: 1)
        settings.initialize(to: Self.callbacks)
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        parser.deallocate()
        settings.deallocate()
    }

    /// Parses `bytes` up to the end of the next request (see `Outcome`). Never call it with
    /// no bytes.
    public func consume(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        precondition(!bytes.isEmpty)
        let errno = runnel_http_errno(parser)
        if errno == HPE_PAUSED { http_parser_pause(parser, 0) } else if errno != HPE_OK { return .failed(stuck) }
        let consumed = http_parser_execute(
            parser, settings, bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count)
        switch runnel_http_errno(parser) {
        case HPE_OK:
            // Every request's end pauses the parser (`endRequest`), an upgrade's too: with no
            // pause, the request goes on in later input, even when its head asked for an
            // upgrade (its body is still to come; http_parser marks the upgrade at the head).
            return .needsMore
        case HPE_PAUSED:
            return runnel_http_is_upgrade(parser) != 0
                ? .upgraded(consumed: consumed) : .requestEnded(consumed: consumed)
        case HPE_HEADER_OVERFLOW:
            return .failed(
                HTTPFailure(
                    .limit, "the request head is over \(Self.maxHeadBytes) bytes", status: .headerFieldsTooLarge))
        default:
            return .failed(stuck)
        }
    }

    /// Why the parser stopped for good.
    private var stuck: HTTPFailure {
        if let failure { return failure }
        let description = String(cString: http_errno_description(runnel_http_errno(parser)))
        return HTTPFailure(.badRequest, "not a valid request: \(description)")
    }

    // MARK: Callbacks

    private static func owner(_ parser: UnsafeMutablePointer<http_parser>?) -> HTTPRequestParser {
        Unmanaged<HTTPRequestParser>.fromOpaque(parser!.pointee.data).takeUnretainedValue()
    }

    private static let callbacks = http_parser_settings(
        on_message_begin: { parser in owner(parser).beginRequest() },
        on_url: { parser, data, count in owner(parser).appendTarget(data, count) },
        on_status: nil,
        on_header_field: { parser, data, count in owner(parser).appendField(data, count, isValue: false) },
        on_header_value: { parser, data, count in owner(parser).appendField(data, count, isValue: true) },
        on_headers_complete: { parser in owner(parser).endHead() },
        on_body: { parser, data, count in owner(parser).readBody(data, count) },
        on_message_complete: { parser in owner(parser).endRequest() },
        on_chunk_header: nil,
        on_chunk_complete: nil)

    private func beginRequest() -> Int32 {
        headBytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
        targetEnd = 0
        readingValue = false
        bodyBytes = 0
        delegate.parserDidBeginRequest()
        return 0
    }

    private func appendTarget(_ data: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        headBytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        targetEnd = headBytes.count
        return 0
    }

    /// A piece of a field's name or value (http_parser may split either across reads).
    private func appendField(_ data: UnsafePointer<CChar>?, _ count: Int, isValue: Bool) -> Int32 {
        let start = headBytes.count
        let piece = UnsafeRawBufferPointer(start: data, count: count)
        if isValue {
            headBytes.append(contentsOf: piece)
            if !readingValue {
                readingValue = true
                fields[fields.count - 1].value = start..<headBytes.count
            } else {
                fields[fields.count - 1].value = fields[fields.count - 1].value.lowerBound..<headBytes.count
            }
            return 0
        }
        // Names are compared lower-cased; ASCII is all a valid name holds.
        for byte in piece { headBytes.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) }
        if readingValue || fields.isEmpty {
            readingValue = false
            fields.append((start..<headBytes.count, headBytes.count..<headBytes.count))
        } else {
            fields[fields.count - 1].name = fields[fields.count - 1].name.lowerBound..<headBytes.count
        }
        return 0
    }

    /// The head is done: checks the body's announced length, then hands the head over.
    private func endHead() -> Int32 {
        let isChunked = runnel_http_is_chunked(parser) != 0
        // http_parser refuses a request `Transfer-Encoding` not ending in `chunked` only after
        // this callback, which would let the head be answered first (a 401, say).
        if runnel_http_uses_transfer_encoding(parser) != 0 && !isChunked {
            failure = HTTPFailure(.badRequest, "not a valid request: Transfer-Encoding must end in chunked")
            return -1
        }
        let length = parser.pointee.content_length
        let hasLength = length != UInt64.max
        if !isChunked && hasLength && length > UInt64(maxBodyBytes) {
            failure = Self.bodyTooLarge(maxBodyBytes)
            return -1
        }
        delegate.parserDidReadHead(
            HTTPRequestHead(
                method: HTTPMethod(parserMethod: runnel_http_method(parser)),
                keepsAlive: http_should_keep_alive(parser) != 0, isUpgrade: runnel_http_is_upgrade(parser) != 0,
                hasBody: isChunked || (hasLength && length > 0), bytes: headBytes, target: 0..<targetEnd,
                fields: fields))
        return 0
    }

    /// Hands over the body up to the limit, then fails: the same bytes reach the delegate
    /// however the input was cut into reads.
    private func readBody(_ data: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        let room = maxBodyBytes - bodyBytes
        let piece = UnsafeRawBufferPointer(start: data, count: min(count, room))
        bodyBytes += piece.count
        if !piece.isEmpty { delegate.parserDidReadBody(piece) }
        guard count <= room else {
            failure = Self.bodyTooLarge(maxBodyBytes)
            return -1
        }
        return 0
    }

    private func endRequest() -> Int32 {
        delegate.parserDidEndRequest()
        http_parser_pause(parser, 1)
        return 0
    }

    private static func bodyTooLarge(_ limit: Int) -> HTTPFailure {
        HTTPFailure(.limit, "the request body is over max_body_bytes (\(limit))")
    }
}
