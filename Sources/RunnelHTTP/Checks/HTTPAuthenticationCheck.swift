import RunnelServer

/// A request without an accepted token is `401 unauthorized`, except where none is needed:
/// a CORS preflight (browsers send it without credentials), `/healthz`, the dashboard's
/// page (which holds no data and asks for a token itself, over `/ws`) and the JavaScript client
/// it loads (`/runnel.js`, code that is no secret), the files of `http_static_dir` (a team's
/// own pages, which are as the dashboard's), and a WebSocket
/// upgrade without any token, which may send `auth` as its first message, as on TCP. A refused
/// token's answer says why (a JWT's failed check).
///
/// Thread rules: an immutable value. Lifetime rule: one request's.
struct HTTPAuthenticationCheck: HTTPRequestCheck {
    func decide(_ request: HTTPRequestFacts) -> HTTPCheckDecision {
        let head = request.head
        let path = head.path
        if request.credential.grant != nil { return .pass }
        let isOpenToAll =
            head.method == .options
            || ([.get, .head].contains(head.method)
                && (path == HealthRoute.path || path == IndexRoute.path || path == ClientModuleRoute.path
                    || request.route is StaticFilesRoute))
        if isOpenToAll { return .pass }
        switch request.credential {
        case .refused(let reason): return .answer(.failure(HTTPFailure(reason)))
        case .absent where head.method == .get && path == WebSocketRoute.path: return .pass
        default:
            return .answer(
                .failure(HTTPFailure(.unauthorized, "a token is needed: Authorization: Bearer TOKEN or ?token=")))
        }
    }
}
