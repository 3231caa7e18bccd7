/// Who may use the front door (docs/protocol.md, "The HTTP front door"): authentication by
/// `Authorization: Bearer TOKEN` or `?token=`, and the origin rules for requests from web
/// pages, with the CORS fields allowed origins get. Reads the server's live configuration
/// (`auth_tokens` and `http_allowed_origins` change on reload). Loop thread only.
struct HTTPAccess {
    let tokens: [String]
    let allowedOrigins: [String]

    /// Whether the request carries an accepted token (always, when no tokens are configured),
    /// compared in constant time as the line protocol's `auth` is.
    func isAuthenticated(_ head: HTTPRequestHead, query: [String: String]) -> Bool {
        guard !tokens.isEmpty else { return true }
        let bearer = "bearer "
        if let authorization = head.field("authorization"), authorization.lowercased().hasPrefix(bearer) {
            return ConstantTime.matchesAny(String(authorization.dropFirst(bearer.count)), tokens)
        }
        return query["token"].map { ConstantTime.matchesAny($0, tokens) } ?? false
    }

    /// The request's `Origin` when it is one the server allows to read its answers: listed in
    /// `http_allowed_origins`. (Its own pages need no CORS fields.)
    func allowedOrigin(of head: HTTPRequestHead) -> String? {
        guard let origin = head.field("origin") else { return nil }
        return allowedOrigins.contains(origin) ? origin : nil
    }

    /// Whether a request that changes something (a `POST`) may come from where it says it
    /// comes from: no `Origin` (curl, scripts), the server's own origin, or an allowed one.
    /// Anything else is a page of another site driving its visitor's browser.
    func mayChange(_ head: HTTPRequestHead) -> Bool {
        guard let origin = head.field("origin") else { return true }
        return HTTPOrigin.isSameOrigin(origin, host: head.field("host")) || allowedOrigins.contains(origin)
    }

    /// The CORS fields of an answer to `origin`, an allowed origin.
    static func corsFields(for origin: String) -> [(name: StaticString, value: String)] {
        [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
    }

    /// The answer to a CORS preflight (`OPTIONS`) for a path answering `methods`: `204`, with
    /// the fields that let an allowed origin send its request (the exchange adds the origin's
    /// own); none for another origin, whose browser then refuses to send it.
    func preflightResponse(_ head: HTTPRequestHead, methods: [HTTPMethod]) -> HTTPResponse {
        var response = HTTPResponse(status: .noContent, contentType: nil, body: [])
        guard allowedOrigin(of: head) != nil else { return response }
        response.fields = [
            ("Access-Control-Allow-Methods", (methods + [.options]).map(\.name).joined(separator: ", ")),
            ("Access-Control-Allow-Headers", "Authorization, Content-Type"),
            ("Access-Control-Max-Age", "600"),
        ]
        return response
    }
}
