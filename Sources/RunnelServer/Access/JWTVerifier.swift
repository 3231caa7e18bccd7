import RunnelCrypto
import RunnelJSON
import RunnelProtocol

/// Verifies tokens of the form `header.payload.signature` as JWTs (RFC 7519, JWS compact
/// serialization) against the configured keys, and turns one that passes into the grant of
/// the rights its `runnel` claim gives. The checks, in order, each refusing with
/// `unauthorized` and a message naming it: the token's shape and header (`malformed`); `alg`,
/// which must be HS256, RS256 or ES256 (`none` never is) and served by a configured key of its
/// own kind, chosen by `kid` when the token names one; the signature; then the claims: `exp`
/// (required) in the future and `nbf` in the past, both within `jwt_leeway`; `iss` and `aud`
/// when `jwt_issuer` and `jwt_audience` are set. Nothing in the token chooses a key from
/// outside the configuration (`jku`, `x5u` and `jwk` are ignored); a `crit` header is refused.
///
/// Thread rules: immutable; safe from any thread (it runs on the loop's). Lifetime rule: built
/// with its `AccessList` from a configuration, replaced with it on reload.
final class JWTVerifier: Sendable {
    private let keys: [JWTKey]
    private let issuer: String?
    private let audience: String?
    private let leeway: Double
    /// Header and claims are small: a deeper nesting is not a JWT of ours.
    private static let maxDepth = 16

    /// Nil when the configuration has no JWT key: JWTs are not accepted.
    init?(config: ServerConfig) {
        guard !config.jwtKeys.isEmpty else { return nil }
        keys = config.jwtKeys
        issuer = config.jwtIssuer
        audience = config.jwtAudience
        leeway = Double(config.jwtLeeway)
    }

    /// Whether `token` has the JWT's form, two dots: such a token is verified as one.
    static func hasJWTForm(_ token: String) -> Bool {
        token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The grant of `token`'s rights, or why it is refused; `now` is seconds since the epoch.
    func verify(_ token: String, at now: Double) -> Result<TokenGrant, ProtocolError> {
        do throws(ProtocolError) {
            return .success(try grant(of: token, at: now))
        } catch {
            return .failure(error)
        }
    }

    private func grant(of token: String, at now: Double) throws(ProtocolError) -> TokenGrant {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Self.malformed("not three base64url parts joined by dots") }
        let header = try Self.object(parts[0], "header")
        let (algorithm, keyID) = try Self.algorithm(of: header)
        let candidates = keys(for: algorithm, id: keyID)
        guard !candidates.isEmpty else {
            throw ProtocolError(
                .unauthorized, "no key for JWT alg \(algorithm.rawValue)" + (keyID.map { " with kid \($0)" } ?? ""))
        }
        guard let signature = Base64URL.decode(parts[2]) else { throw Self.malformed("the signature is not base64url") }
        let signed = token.utf8[token.utf8.startIndex..<parts[1].endIndex]
        guard candidates.contains(where: { $0.verifies(signature, of: signed) }) else {
            throw ProtocolError(.unauthorized, "JWT signature does not verify")
        }
        let claims = try JWTClaims(Self.object(parts[1], "payload"))
        guard now < claims.expiry + leeway else { throw ProtocolError(.unauthorized, "JWT expired") }
        if let notBefore = claims.notBefore, now + leeway < notBefore {
            throw ProtocolError(.unauthorized, "JWT not yet valid (nbf)")
        }
        if let issuer, claims.issuer != issuer {
            throw ProtocolError(.unauthorized, "JWT issuer does not match jwt_issuer")
        }
        if let audience, !claims.audiences.contains(audience) {
            throw ProtocolError(.unauthorized, "JWT audience does not match jwt_audience")
        }
        return TokenGrant(
            digest: nil, source: claims.subject.map { "JWT sub=\($0)" } ?? "JWT",
            publish: SubjectRights(claims.publish), subscribe: SubjectRights(claims.subscribe),
            mayManage: claims.manage,
            jwt: JWTIdentity(token: token, closesAt: claims.expiry + leeway, subject: claims.subject))
    }

    /// The header's `alg`, one this verifier knows, and its `kid`.
    private static func algorithm(of header: JSONObject) throws(ProtocolError) -> (JWTAlgorithm, String?) {
        guard case .string(let name)? = header["alg"] else { throw malformed("the header has no alg") }
        guard let algorithm = JWTAlgorithm(rawValue: name) else {
            if name.lowercased() == "none" { throw ProtocolError(.unauthorized, "JWT alg none is never accepted") }
            let served = JWTAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")
            throw ProtocolError(.unauthorized, "JWT alg \(name) is not supported (\(served))")
        }
        guard header["crit"] == nil else { throw malformed("crit header parameters are not supported") }
        switch header["kid"] {
        case nil: return (algorithm, nil)
        case .string(let id)?: return (algorithm, id)
        default: throw malformed("kid is not a string")
        }
    }

    /// The keys that may have signed a token of `algorithm`: with a `kid`, those that carry
    /// it, or, when none does, those that carry no `kid`; without, every key of the algorithm.
    private func keys(for algorithm: JWTAlgorithm, id: String?) -> [JWTKey] {
        let served = keys.filter { $0.algorithm == algorithm }
        guard let id else { return served }
        let named = served.filter { $0.id == id }
        return named.isEmpty ? served.filter { $0.id == nil } : named
    }

    /// A part decoded from base64url and parsed as a JSON object.
    private static func object(_ part: Substring.UTF8View, _ name: String) throws(ProtocolError) -> JSONObject {
        guard let bytes = Base64URL.decode(part) else { throw malformed("the \(name) is not base64url") }
        guard case .object(let object)? = try? JSONParser(maxDepth: maxDepth).parse(bytes) else {
            throw malformed("the \(name) is not a JSON object")
        }
        return object
    }

    /// The refusal of a token that is not a well-formed JWT of the contract.
    static func malformed(_ what: String) -> ProtocolError {
        ProtocolError(.unauthorized, "malformed JWT: \(what)")
    }
}
