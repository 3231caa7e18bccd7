import RunnelServer

/// A path with no route is `404 not_found`; a method its route does not answer is
/// `405 method_not_allowed` with `Allow`. `OPTIONS` passes: `HTTPPreflightCheck` answers it.
///
/// Thread rules: an immutable value. Lifetime rule: one request's.
struct HTTPRouteCheck: HTTPRequestCheck {
    func decide(_ request: HTTPRequestFacts) -> HTTPCheckDecision {
        let head = request.head
        guard let route = request.route else {
            return .answer(.failure(HTTPFailure(.notFound, "nothing at \(head.path)")))
        }
        if head.method == .options || route.methods.contains(head.method) { return .pass }
        var response = HTTPResponse.failure(
            HTTPFailure(.methodNotAllowed, "\(head.path) answers \(route.methods.map(\.name).joined(separator: ", "))"))
        response.fields.append(("Allow", (route.methods + [.options]).map(\.name).joined(separator: ", ")))
        return .answer(response)
    }
}
