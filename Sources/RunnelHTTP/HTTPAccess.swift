import RunnelProtocol
import RunnelServer

/// Who may use the front door (docs/protocol.md, "The HTTP front door"): authentication by
/// `Authorization: Bearer TOKEN` or `?token=`, and the origin rules for requests from web
/// pages, with the CORS fields allowed origins get; the checks that use them are in `Checks`
/// (`HTTPRequestChecks`).
///
/// Thread rules: loop thread only. Lifetime rule: built per request from the server's live
/// configuration (the tokens and `http_allowed_origins` change on reload), never kept.
struct HTTPAccess {
    let tokens: AccessList
    let allowedOrigins: [String]

    /// What a request's token says of it.
    enum Credential {
        /// An accepted token with its rights, or the open grant when none is configured.
        case accepted(TokenGrant)
        /// A token that is not one of the configured ones, nor a JWT that verifies: why.
        case refused(ProtocolError)
        /// No token, where tokens are configured.
        case absent

        /// The accepted token's grant; nil when refused or absent.
        var grant: TokenGrant? {
            guard case .accepted(let grant) = self else { return nil }
            return grant
        }
    }

    /// The request's token (`Authorization: Bearer` wins over `?token=`), compared in constant
    /// time or verified as a JWT, as the line protocol's `auth` is (`AccessList.authenticate`);
    /// `now` is seconds since the Unix epoch.
    func credential(of head: HTTPRequestHead, query: [String: String], at now: Double) -> Credential {
        if let openGrant = tokens.openGrant { return .accepted(openGrant) }
        let bearer = "bearer "
        let token: String?
        if let authorization = head.field("authorization"), authorization.lowercased().hasPrefix(bearer) {
            token = String(authorization.dropFirst(bearer.count))
        } else {
            token = query["token"]
        }
        guard let token else { return .absent }
        switch tokens.authenticate(token, at: now) {
        case .success(let grant): return .accepted(grant)
        case .failure(let reason): return .refused(reason)
        }
    }

    /// Whether a page of `origin` may use the front door, sent to `host`: the server's own
    /// page, or one `http_allowed_origins` lists.
    func allows(_ origin: String, host: String?) -> Bool {
        HTTPOrigin.isAllowed(origin, host: host, allowed: allowedOrigins)
    }

    /// The request's `Origin` when it is one the server allows to read its answers: listed in
    /// `http_allowed_origins`. (Its own pages need no CORS fields.)
    func allowedOrigin(of head: HTTPRequestHead) -> String? {
        guard let origin = head.field("origin") else { return nil }
        return allowedOrigins.contains(origin) ? origin : nil
    }

    /// The CORS fields of an answer to `origin`, an allowed origin.
    static func corsFields(for origin: String) -> [(name: StaticString, value: String)] {
        [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
    }
}
