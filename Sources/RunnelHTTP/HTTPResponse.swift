import RunnelCompression
import RunnelProtocol
import RunnelServer
import RunnelUV

/// One answer: a status, header fields and a whole body (every answer of the front door is
/// small, or, like `/subjects`, as large as the `list` reply would be, or a file of
/// `http_static_dir`, at most `StaticFilesRoute.maxFileBytes`). An immutable value once
/// built; `encodedHead(closing:)` writes the head the connection sends.
struct HTTPResponse {
    let status: HTTPStatus
    let contentType: StaticString?
    private(set) var body: [UInt8]
    /// Fields beyond the ones every answer has (`Allow`, `WWW-Authenticate`, CORS).
    var fields: [(name: StaticString, value: String)] = []
    /// The protocol error the body reports, for an error answer (counted in `/metrics`).
    private(set) var errorCode: ErrorCode?
    /// Whether the body is not `body` but a stream written after the head until the
    /// connection closes (Server-Sent Events): the head then has no `Content-Length`.
    private(set) var isStream = false
    /// Whether the body (or the stream) is gzip'd (`encoded(gzip:)`).
    private(set) var isGzipped = false
    /// Whether `encoded(gzip:)` may gzip the body: not one compressed already (`compressedAlready()`).
    private(set) var isCompressible = true
    /// The body gzip'd ahead of time, for an answer given many times (`precompressed()`).
    private var gzippedBody: [UInt8]?

    init(status: HTTPStatus, contentType: StaticString?, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// A JSON body (a compact object or array, as the line protocol writes them).
    static func json(_ body: [UInt8], status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: body)
    }

    /// The head of a body streamed until the connection closes, of `contentType`.
    static func stream(contentType: StaticString) -> HTTPResponse {
        var response = HTTPResponse(status: .ok, contentType: contentType, body: [])
        response.isStream = true
        return response
    }

    /// `text` as `text/plain`.
    static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    /// `html` as `text/html` (the dashboard page).
    static func html(_ html: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/html; charset=utf-8", body: Array(html.utf8))
    }

    /// `source` as `text/javascript` (the JavaScript client module).
    static func javascript(_ source: String) -> HTTPResponse {
        HTTPResponse(status: .ok, contentType: "text/javascript; charset=utf-8", body: Array(source.utf8))
    }

    /// This answer with its gzip'd body made now, for a route that gives it again and again
    /// (the dashboard page, the client module), so no request compresses it.
    func precompressed() -> HTTPResponse {
        var response = self
        response.gzippedBody = GzipBody().compress(body)
        return response
    }

    /// The bytes it holds: its body, and the gzip'd one made ahead (`precompressed()`).
    var heldBytes: Int { body.count + (gzippedBody?.count ?? 0) }

    /// This answer with a body compressed already (a PNG, a JPEG), which gzip would not shrink:
    /// sent as it is with compression on too.
    func compressedAlready() -> HTTPResponse {
        var response = self
        response.isCompressible = false
        return response
    }

    /// This answer as sent with compression on: `Vary: Accept-Encoding` on one with a body or a
    /// stream, and with `gzip` (given when the request accepts it) its body gzip'd, or its
    /// stream to be, with `Content-Encoding: gzip`. One compressed already goes as it is.
    func encoded(gzip: GzipBody?) -> HTTPResponse {
        guard isCompressible, !body.isEmpty || isStream else { return self }
        var encoded = self
        encoded.fields.append(("Vary", "Accept-Encoding"))
        guard let gzip else { return encoded }
        if !isStream { encoded.body = gzippedBody ?? gzip.compress(body) }
        encoded.gzippedBody = nil
        encoded.isGzipped = true
        encoded.fields.append(("Content-Encoding", "gzip"))
        return encoded
    }

    /// An error: a failed reply's line, `{"ok":false,"code":C,"message":M}` (with the members
    /// `extra` adds), under its status.
    static func failure(_ failure: HTTPFailure, _ extra: (inout ServerLineWriter) -> Void = { _ in }) -> HTTPResponse {
        var line = ServerLineWriter.reply(SessionReply(ref: nil, .failed(failure.error)))
        extra(&line)
        var response = json(line.finish(), status: failure.status)
        response.errorCode = failure.error.code
        switch failure.error.code {
        case .unauthorized: response.fields.append(("WWW-Authenticate", "Bearer"))
        default: break
        }
        return response
    }

    /// Queues the answer on `connection` (loop thread); `closing` says the connection closes
    /// after it. The answer to a `HEAD` request is the head alone (its `Content-Length` is the
    /// body's, as for `GET`).
    func write(to connection: any ByteStream, closing: Bool, withBody: Bool = true) {
        encodedHead(closing: closing).withUnsafeBytes { _ = connection.write(copying: $0) }
        if withBody && !body.isEmpty { body.withUnsafeBytes { _ = connection.write(copying: $0) } }
    }

    /// The status line and header fields, ending with the empty line; `Connection: close`
    /// when the connection closes after this answer (always, for a stream).
    func encodedHead(closing: Bool) -> [UInt8] {
        var head: [UInt8] = []
        head.reserveCapacity(160)
        head.append(contentsOf: "HTTP/1.1 \(status.code) ".utf8)
        head.append(static: status.reason)
        if let contentType {
            head.append(contentsOf: "\r\nContent-Type: ".utf8)
            head.append(static: contentType)
        }
        // A 1xx, 204 or 304 has no body, so no length either (RFC 9110, 8.6).
        if !isStream && status.code >= 200 && status != .noContent && status != .notModified {
            head.append(contentsOf: "\r\nContent-Length: \(body.count)".utf8)
        }
        if closing { head.append(contentsOf: "\r\nConnection: close".utf8) }
        for field in fields {
            head.append(contentsOf: "\r\n".utf8)
            head.append(static: field.name)
            head.append(contentsOf: ": ".utf8)
            head.append(contentsOf: field.value.utf8)
        }
        head.append(contentsOf: "\r\n\r\n".utf8)
        return head
    }
}

extension [UInt8] {
    fileprivate mutating func append(static text: StaticString) {
        append(contentsOf: text.rawBytes)
    }
}
