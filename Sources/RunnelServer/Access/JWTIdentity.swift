/// What a grant made from a JWT remembers of it: the token, re-verified when a reload changes
/// the keys (a key taken out revokes the tokens it signed), the instant the connection is
/// closed for its expiry (`exp` plus `jwt_leeway`), and the user its `sub` names, for logs.
///
/// Thread rules: an immutable value. Lifetime rule: held by its `TokenGrant`.
struct JWTIdentity: Sendable {
    let token: String
    /// Seconds since the Unix epoch.
    let closesAt: Double
    let subject: String?
}
