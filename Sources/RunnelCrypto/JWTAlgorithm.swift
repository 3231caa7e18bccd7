/// The JWS algorithms runneld verifies (RFC 7518): each is served only by keys of its own
/// kind, so a token cannot choose how its signature is checked beyond picking among the
/// configured keys of the algorithm it names. `none` and every other name are refused.
///
/// Thread rules: an immutable value. Lifetime rule: none.
package enum JWTAlgorithm: String, Sendable, CaseIterable {
    /// HMAC-SHA256, with a configured secret (`jwt_secrets`).
    case hs256 = "HS256"
    /// RSASSA-PKCS1-v1_5 with SHA-256, with an RSA public key.
    case rs256 = "RS256"
    /// ECDSA on P-256 with SHA-256, with an EC public key on that curve.
    case es256 = "ES256"
}
