import RunnelServer

/// A request that changes something (a `POST`, a `DELETE` of a map's key, or a WebSocket
/// upgrade, which can publish as a `POST` can) is `403 forbidden_origin` unless it comes from no `Origin` (curl, scripts), the
/// server's own origin, or an allowed one: anything else is a page of another site driving
/// its visitor's browser. Reads pass.
///
/// Thread rules: an immutable value. Lifetime rule: one request's (the origins change on reload).
struct HTTPOriginCheck: HTTPRequestCheck {
    /// `http_allowed_origins`.
    let allowedOrigins: [String]

    func decide(_ request: HTTPRequestFacts) -> HTTPCheckDecision {
        let head = request.head
        guard head.method == .post || head.method == .delete || head.isUpgrade, let origin = head.field("origin") else {
            return .pass
        }
        if HTTPOrigin.isAllowed(origin, host: head.field("host"), allowed: allowedOrigins) { return .pass }
        return .answer(
            .failure(
                HTTPFailure(
                    .forbiddenOrigin,
                    "requests from this origin are not allowed (http_allowed_origins lists the origins that are)")))
    }
}
