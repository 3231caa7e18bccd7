import RunnelProtocol

/// What one token may do: the subjects it may publish to and subscribe to, and whether it may
/// manage subjects and read the server's figures. One per configured token (a `[[tokens]]`
/// table, or an `auth_tokens` entry, which may do everything), one for a server without
/// tokens, and one per verified JWT (its `runnel` claim); every session and request
/// authenticated with that token shares it.
///
/// Thread rules: immutable, so `Sendable`; read on the loop thread. Lifetime rule: a class for
/// its identity: a reload builds new grants (`AccessList`), and a session moves to its token's
/// new grant (found by `digest`, or by verifying its JWT again); sessions and requests hold it.
package final class TokenGrant: Sendable {
    /// SHA-256 of a configured token; nil for a server without tokens and for a JWT.
    let digest: [UInt8]?
    /// Where the token is configured (`tokens[2]`, `auth_tokens[0]`), or the JWT's `sub`, for logs.
    let source: String
    let publish: SubjectRights
    let subscribe: SubjectRights
    /// `create`, `complete`, `error`, `delete`, and the server's figures (`stats`, `/stats`,
    /// `/metrics`).
    let mayManage: Bool
    /// The JWT this grant was made from; nil for a configured token.
    let jwt: JWTIdentity?

    init(
        digest: [UInt8]?, source: String, publish: SubjectRights, subscribe: SubjectRights, mayManage: Bool,
        jwt: JWTIdentity? = nil
    ) {
        self.digest = digest
        self.source = source
        self.publish = publish
        self.subscribe = subscribe
        self.mayManage = mayManage
        self.jwt = jwt
    }

    /// Every right: an `auth_tokens` token, or everyone on a server without tokens.
    static func everything(digest: [UInt8]?, source: String) -> TokenGrant {
        TokenGrant(digest: digest, source: source, publish: .everything, subscribe: .everything, mayManage: true)
    }

    /// Whether `other` allows exactly what this grant allows.
    func hasSameRights(as other: TokenGrant) -> Bool {
        publish == other.publish && subscribe == other.subscribe && mayManage == other.mayManage
    }

    /// Whether the token may read `name`: subscribe to it, or list it when it may publish to it.
    package func mayList(_ name: String) -> Bool { subscribe.permits(name) || publish.permits(name) }

    // MARK: Checks, throwing the `unauthorized` error that names the missing right

    func checkPublish(to name: String) throws(ProtocolError) {
        guard publish.permits(name) else { throw ProtocolError(.unauthorized, "token may not publish to \(name)") }
    }

    func checkSubscribe(to name: String) throws(ProtocolError) {
        guard subscribe.permits(name) else { throw ProtocolError(.unauthorized, "token may not subscribe to \(name)") }
    }

    /// `op` is one of `create`, `complete`, `error`, `delete`, `stats`.
    package func checkManage(_ op: String) throws(ProtocolError) {
        guard mayManage else { throw ProtocolError(.unauthorized, "token may not \(op) (it lacks manage)") }
    }
}
