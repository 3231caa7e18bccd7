/// The tokens the server accepts and what each may do, built from the configuration's
/// `auth_tokens` and `[[tokens]]` (one `TokenGrant` each), or, with neither, one grant of every
/// right that every connection gets without `auth`. Rebuilt on each reload.
///
/// An offered token is hashed once with SHA-256 and its digest compared with every
/// configured token's digest in constant time (`ConstantTime.equals`), with no early exit: how
/// long it takes tells nothing of which token came close, and a `[[tokens]]` table given as
/// `sha256` is matched without the file holding the secret. Immutable: safe from any thread.
final class AccessList: Sendable {
    let grants: [TokenGrant]
    /// The grant of every connection when no token is configured; nil when tokens are.
    let openGrant: TokenGrant?

    init(config: ServerConfig) {
        var grants: [TokenGrant] = []
        for (index, token) in config.authTokens.enumerated() {
            grants.append(.everything(digest: TokenDigest.of(token), source: "auth_tokens[\(index)]"))
        }
        for (index, definition) in config.tokens.enumerated() {
            grants.append(
                TokenGrant(
                    digest: definition.digest, source: "tokens[\(index)]",
                    publish: SubjectRights(definition.publish), subscribe: SubjectRights(definition.subscribe),
                    mayManage: definition.manage))
        }
        self.grants = grants
        openGrant = grants.isEmpty ? .everything(digest: nil, source: "no tokens configured") : nil
    }

    /// The grant of `token`, or nil when no configured token is it. Without tokens, the open grant.
    func grant(for token: String) -> TokenGrant? {
        if let openGrant { return openGrant }
        let offered = TokenDigest.of(token)
        var found: TokenGrant?
        for grant in grants {
            // Every digest is compared; the parser refuses two tables with one token.
            if let digest = grant.digest, ConstantTime.equals(offered, digest) { found = grant }
        }
        return found
    }

    /// The grant that takes over from `old` (a grant of an earlier list): the same token's, or
    /// the open grant for a session that had the earlier open grant; nil when that token is
    /// gone (or tokens are now needed).
    func successor(of old: TokenGrant) -> TokenGrant? {
        guard let digest = old.digest else { return openGrant }
        return grants.first { $0.digest == digest }
    }
}
