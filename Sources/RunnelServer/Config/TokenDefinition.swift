import RunnelCrypto

/// One `[[tokens]]` table: a token, given as itself or as its SHA-256 digest, with the subjects
/// it may publish to and subscribe to and whether it may manage subjects. What is left out
/// is not allowed.
///
/// Immutable value; checked by the parser (one of `token` and `sha256`, a well-formed digest,
/// valid subject names and patterns).
public struct TokenDefinition: Sendable, Equatable {
    /// How the file gives the token.
    public enum Secret: Sendable, Equatable {
        /// `token = "..."`: the token itself.
        case token(String)
        /// `sha256 = "..."`: the hex digest of the token, so the file holds no secret.
        case sha256(String)
    }

    public let secret: Secret
    /// Subjects and patterns `pub` may name (`publish`, default none).
    public let publish: [String]
    /// Subjects and patterns `sub`, `/events` and stages may reach (`subscribe`, default none).
    public let subscribe: [String]
    /// `create`, `complete`, `error`, `delete` and the server's figures (`manage`, default false).
    public let manage: Bool

    public init(secret: Secret, publish: [String] = [], subscribe: [String] = [], manage: Bool = false) {
        self.secret = secret
        self.publish = publish
        self.subscribe = subscribe
        self.manage = manage
    }

    /// The SHA-256 digest of the token, whichever way the file gives it.
    var digest: [UInt8] {
        switch secret {
        case .token(let token): return TokenDigest.of(token)
        case .sha256(let hex):
            guard let digest = TokenDigest.parse(hex: hex) else {
                preconditionFailure("the parser accepted a malformed digest")
            }
            return digest
        }
    }
}
