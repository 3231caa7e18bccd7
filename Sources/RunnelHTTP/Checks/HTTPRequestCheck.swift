import RunnelServer

/// One of the checks every request of the front door passes before its route: a small value
/// that reads what is known of the request and either lets it through or answers it.
/// `HTTPRequestChecks.frontDoor` composes them, in the order the contract needs, with `then`.
///
/// Thread rules: a value; used on the loop thread, like the request it decides. Lifetime rule:
/// built for one request (the allowed origins change on reload) and dropped after it.
protocol HTTPRequestCheck {
    /// Lets `request` through (`.pass`) or answers it (`.answer`): no later check and no route
    /// then sees it.
    func decide(_ request: HTTPRequestFacts) -> HTTPCheckDecision
}

/// What a check decides of a request.
///
/// Thread rules: an immutable value. Lifetime rule: lives as long as the decision is read.
enum HTTPCheckDecision {
    /// On to the next check, or to the route after the last one.
    case pass
    /// The request's answer (`401`, `404`, `405`, a preflight's `204`, ...).
    case answer(HTTPResponse)
}

/// What the checks read of a request, found once for all of them: the head, its decoded
/// query (nil when not valid percent-encoded UTF-8), what its token says and its route.
///
/// Thread rules: an immutable value. Lifetime rule: one request's, dropped after the checks.
struct HTTPRequestFacts {
    let head: HTTPRequestHead
    let query: [String: String]?
    let credential: HTTPAccess.Credential
    /// The route of the head's path; nil when nothing is there.
    let route: (any HTTPRoute)?
}

/// Two checks in order: `second` decides only what `first` lets through.
///
/// Thread rules: a value, as its two checks. Lifetime rule: as its checks.
struct HTTPCheckSequence<First: HTTPRequestCheck, Second: HTTPRequestCheck>: HTTPRequestCheck {
    let first: First
    let second: Second

    func decide(_ request: HTTPRequestFacts) -> HTTPCheckDecision {
        if case .answer(let response) = first.decide(request) { return .answer(response) }
        return second.decide(request)
    }
}

extension HTTPRequestCheck {
    /// This check, then `next` for what it lets through. Generic, so a composed chain costs
    /// no allocation and no dynamic dispatch per request.
    func then<Next: HTTPRequestCheck>(_ next: Next) -> HTTPCheckSequence<Self, Next> {
        HTTPCheckSequence(first: self, second: next)
    }
}

/// The front door's checks in their fixed order.
///
/// Thread rules: none (a namespace). Lifetime rule: none.
enum HTTPRequestChecks {
    /// The query's encoding, then authentication (a stranger learns nothing, not even which
    /// paths exist), then the path and its methods, then a CORS preflight's answer, then the
    /// origin of a change. `allowedOrigins` is `http_allowed_origins` as now configured.
    static func frontDoor(allowedOrigins: [String]) -> some HTTPRequestCheck {
        HTTPQueryCheck()
            .then(HTTPAuthenticationCheck())
            .then(HTTPRouteCheck())
            .then(HTTPPreflightCheck(allowedOrigins: allowedOrigins))
            .then(HTTPOriginCheck(allowedOrigins: allowedOrigins))
    }
}
