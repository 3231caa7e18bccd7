/// What one configured token may do: the subjects it may publish to and subscribe to, and
/// whether it may manage subjects and read the server's figures. One per configured token (a
/// `[[tokens]]` table, or an `auth_tokens` entry, which may do everything), plus one for a
/// server without tokens; every session and request authenticated with that token shares it.
///
/// A class for its identity: a reload builds new grants (`AccessList`), and a session moves
/// to the new grant of its token, found by `digest`. Immutable, so it is `Sendable`; it is
/// read on the loop thread.
final class TokenGrant: Sendable {
    /// SHA-256 of the token; nil for a server without tokens.
    let digest: [UInt8]?
    /// Where the token is configured (`tokens[2]`, `auth_tokens[0]`), for logs.
    let source: String
    let publish: SubjectRights
    let subscribe: SubjectRights
    /// `create`, `complete`, `error`, `delete`, and the server's figures (`stats`, `/stats`,
    /// `/metrics`).
    let mayManage: Bool

    init(digest: [UInt8]?, source: String, publish: SubjectRights, subscribe: SubjectRights, mayManage: Bool) {
        self.digest = digest
        self.source = source
        self.publish = publish
        self.subscribe = subscribe
        self.mayManage = mayManage
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
    func mayList(_ name: String) -> Bool { subscribe.permits(name) || publish.permits(name) }

    // MARK: Checks, throwing the `unauthorized` error that names the missing right

    func checkPublish(to name: String) throws(ProtocolError) {
        guard publish.permits(name) else { throw ProtocolError(.unauthorized, "token may not publish to \(name)") }
    }

    func checkSubscribe(to name: String) throws(ProtocolError) {
        guard subscribe.permits(name) else { throw ProtocolError(.unauthorized, "token may not subscribe to \(name)") }
    }

    /// `op` is one of `create`, `complete`, `error`, `delete`, `stats`.
    func checkManage(_ op: String) throws(ProtocolError) {
        guard mayManage else { throw ProtocolError(.unauthorized, "token may not \(op) (it lacks manage)") }
    }
}
