import RunnelCrypto
import RunnelProtocol

/// The tokens the server accepts and what each may do, built from the configuration's
/// `auth_tokens` and `[[tokens]]` (one `TokenGrant` each) and its JWT keys (a `JWTVerifier`),
/// or, with none of them, one grant of every right that every connection gets without `auth`.
/// Rebuilt on each reload.
///
/// An offered token is hashed once with SHA-256 and its digest compared with every
/// configured token's digest in constant time (`ConstantTime.equals`), with no early exit: how
/// long it takes tells nothing of which token came close, and a `[[tokens]]` table given as
/// `sha256` is matched without the file holding the secret. A token that is none of them and
/// has the form `header.payload.signature` is verified as a JWT.
///
/// Thread rules: immutable, safe from any thread. Lifetime rule: the server holds the current
/// one, each session the one it was last handed.
package final class AccessList: Sendable {
    let grants: [TokenGrant]
    /// The grant of every connection when no token is configured; nil when tokens are.
    package let openGrant: TokenGrant?
    /// Nil when no JWT key is configured: JWTs are not accepted.
    let jwt: JWTVerifier?

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
        jwt = JWTVerifier(config: config)
        openGrant =
            grants.isEmpty && jwt == nil ? .everything(digest: nil, source: "no tokens configured") : nil
    }

    /// The grant of `token`, or the `unauthorized` error saying why there is none; `now` is
    /// seconds since the Unix epoch, for a JWT's times. Without tokens, the open grant.
    package func authenticate(_ token: String, at now: Double) -> Result<TokenGrant, ProtocolError> {
        if let openGrant { return .success(openGrant) }
        if let grant = grant(for: token) { return .success(grant) }
        guard JWTVerifier.hasJWTForm(token) else { return .failure(ProtocolError(.unauthorized, "invalid token")) }
        guard let jwt else {
            return .failure(ProtocolError(.unauthorized, "invalid token (no JWT keys are configured)"))
        }
        return jwt.verify(token, at: now)
    }

    /// The grant of the configured token `token`, or nil when no configured token is it.
    func grant(for token: String) -> TokenGrant? {
        let offered = TokenDigest.of(token)
        var found: TokenGrant?
        for grant in grants {
            // Every digest is compared; the parser refuses two tables with one token.
            if let digest = grant.digest, ConstantTime.equals(offered, digest) { found = grant }
        }
        return found
    }

    /// The grant that takes over from `old` (a grant of an earlier list): the same token's,
    /// the same JWT's verified again (at `now`), or the open grant for a session that had the
    /// earlier open grant; else the reason its session is closed.
    func successor(of old: TokenGrant, at now: Double) -> Result<TokenGrant, ProtocolError> {
        if let token = old.jwt?.token {
            guard let jwt else {
                return .failure(ProtocolError(.unauthorized, "JWTs are no longer accepted (configuration reloaded)"))
            }
            return jwt.verify(token, at: now).mapError { refusal in
                ProtocolError(
                    .unauthorized, "the token no longer verifies (configuration reloaded): \(refusal.message)")
            }
        }
        guard let digest = old.digest else {
            guard let openGrant else {
                return .failure(
                    ProtocolError(.unauthorized, "the server now requires a token (configuration reloaded)"))
            }
            return .success(openGrant)
        }
        guard let grant = grants.first(where: { $0.digest == digest }) else {
            return .failure(ProtocolError(.unauthorized, "the token was removed from the configuration"))
        }
        return .success(grant)
    }
}
