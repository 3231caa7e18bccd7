import RunnelServer

/// Answers a CORS preflight (`OPTIONS`) for a routed path: `204`, with the fields that let an
/// allowed origin send its request (the exchange adds the origin's own); none for another
/// origin, whose browser then refuses to send it. Any other method passes.
///
/// Thread rules: an immutable value. Lifetime rule: one request's (the origins change on reload).
struct HTTPPreflightCheck: HTTPRequestCheck {
    /// `http_allowed_origins`.
    let allowedOrigins: [String]

    func decide(_ request: HTTPRequestFacts) -> HTTPCheckDecision {
        guard request.head.method == .options, let route = request.route else { return .pass }
        var response = HTTPResponse(status: .noContent, contentType: nil, body: [])
        guard let origin = request.head.field("origin"), allowedOrigins.contains(origin) else {
            return .answer(response)
        }
        response.fields = [
            ("Access-Control-Allow-Methods", (route.methods + [.options]).map(\.name).joined(separator: ", ")),
            ("Access-Control-Allow-Headers", "Authorization, Content-Type"),
            ("Access-Control-Max-Age", "600"),
        ]
        return .answer(response)
    }
}
