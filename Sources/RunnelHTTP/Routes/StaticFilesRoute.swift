import RunnelServer

/// `GET` and `HEAD` of a path none of runneld's own routes takes, while `http_static_dir` is
/// set: the file of that name in the folder, never one outside it (`StaticFile`), the folder's
/// `index.html` for a path ending in `/` (a folder asked for without it is sent there, `301`),
/// with its `Content-Type` from its extension and an `ETag`, so a browser that has the file asks
/// again with `If-None-Match` and gets `304`, nothing read. A team's own pages, served next to
/// `/runnel.js` so they are same-origin: like the dashboard's page (`/`), they hold no data and
/// ask for a token themselves, so they need none.
///
/// Files are read on the loop thread, so they are small: one over `maxFileBytes` is refused
/// (`403`, `limit`), never read. A file read is kept, gzip'd too, until it changes
/// (`StaticFileCache`): asked for again, it costs a look-up, not a read or a compression.
///
/// Thread rules: loop thread, as every route. Lifetime rule: the front door holds it.
final class StaticFilesRoute: HTTPRoute {
    static let maxFileBytes = 4 * 1024 * 1024
    let methods: [HTTPMethod] = [.get, .head]
    private unowned let server: Server
    private var cache = StaticFileCache()

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        exchange.answer(answer(to: exchange.head))
        return nil
    }

    private func answer(to head: HTTPRequestHead) -> HTTPResponse {
        let nothing = HTTPResponse.failure(HTTPFailure(.notFound, "nothing at \(head.path)"))
        guard let folder = server.config.httpStaticDir, let name = StaticFile.relativePath(of: head.path) else {
            return nothing
        }
        switch StaticFile.find(name, in: folder) {
        case .nothing:
            return nothing
        case .folder:
            var response = HTTPResponse(status: .movedPermanently, contentType: nil, body: [])
            let target = head.target
            response.fields = [("Location", "\(head.path)/\(target.dropFirst(head.path.count))")]
            return response
        case .file(let file):
            return answer(with: file, named: name, to: head)
        }
    }

    private func answer(with file: borrowing StaticFile, named name: String, to head: HTTPRequestHead)
        -> HTTPResponse
    {
        let tag = file.entityTag
        let fields: [(name: StaticString, value: String)] = [("ETag", tag), ("Cache-Control", "no-cache")]
        if Self.matches(head.field("if-none-match"), tag) {
            var response = HTTPResponse(status: .notModified, contentType: nil, body: [])
            response.fields = fields
            return response
        }
        if let kept = cache.answer(for: file.path, tag: tag) { return kept }
        guard file.size <= Self.maxFileBytes else {
            return .failure(
                HTTPFailure(
                    .limit,
                    "\(head.path) is \(file.size) bytes, over the \(Self.maxFileBytes) a file of http_static_dir "
                        + "may have", status: .forbidden))
        }
        guard let bytes = file.contents() else {
            return .failure(HTTPFailure(.notFound, "\(head.path) cannot be read"))
        }
        let type = StaticFile.mediaType(of: name)
        var response = HTTPResponse(status: .ok, contentType: type.type, body: bytes)
        response.fields = fields + [("X-Content-Type-Options", "nosniff")]
        // Gzip'd now whether `compression` is on or not, so a reload that turns it on finds
        // the kept answers ready.
        response = type.isCompressible ? response.precompressed() : response.compressedAlready()
        cache.keep(response, for: file.path, tag: tag)
        return response
    }

    /// Whether an `If-None-Match` value lists `tag`, compared weakly (RFC 9110, 13.1.2), or is `*`.
    private static func matches(_ ifNoneMatch: String?, _ tag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        let opaque = tag.dropFirst(2)
        return ifNoneMatch.split(separator: ",").contains { listed in
            let listed = listed.trimmingSpaces()
            return listed == "*" || (listed.hasPrefix("W/") ? listed.dropFirst(2) : listed[...]) == opaque
        }
    }
}

/// The static files' answers, kept until their file changes: by real path, with the entity
/// tag they were made for, at most `maxBytes` of bodies (plain and gzip'd) together; past it,
/// every answer goes and the cache fills again (a team's pages fit in it many times over).
///
/// Thread rules: a value, its route's, on the loop thread. Lifetime rule: the route's.
struct StaticFileCache {
    static let maxBytes = 16 * 1024 * 1024
    private var answers: [String: (tag: String, response: HTTPResponse)] = [:]
    private var bytes = 0

    /// The answer kept for the file at `path` as it was when its entity tag was `tag`.
    func answer(for path: String, tag: String) -> HTTPResponse? {
        guard let kept = answers[path], kept.tag == tag else { return nil }
        return kept.response
    }

    /// Keeps `response` for the file at `path` while its entity tag is `tag`.
    mutating func keep(_ response: HTTPResponse, for path: String, tag: String) {
        if let replaced = answers.removeValue(forKey: path) { bytes -= replaced.response.heldBytes }
        if bytes + response.heldBytes > Self.maxBytes {
            answers.removeAll()
            bytes = 0
        }
        answers[path] = (tag, response)
        bytes += response.heldBytes
    }
}
