/// A query that is not valid percent-encoded UTF-8 is `400 bad_request`: no later check or
/// route could read its token or parameters.
///
/// Thread rules: an immutable value. Lifetime rule: one request's.
struct HTTPQueryCheck: HTTPRequestCheck {
    func decide(_ request: HTTPRequestFacts) -> HTTPCheckDecision {
        guard request.query == nil else { return .pass }
        return .answer(.failure(HTTPFailure(.badRequest, "the query is not valid percent-encoded UTF-8")))
    }
}
