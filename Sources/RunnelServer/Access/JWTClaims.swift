import RunnelJSON
import RunnelProtocol

/// The claims of a JWT's payload that runneld reads (RFC 7519 §4.1): `exp` (required), `nbf`,
/// `iss`, `aud` (a string or a list of them), `sub`, and the rights in `runnel`, read as a
/// `[[tokens]]` table's (`publish` and `subscribe` lists, absent empty; `manage`, absent
/// false; nothing else). Other claims are ignored. Read only from a payload whose signature
/// has verified.
///
/// Thread rules: an immutable value. Lifetime rule: one verification's.
struct JWTClaims {
    /// `exp` and `nbf`, NumericDates: seconds since the Unix epoch.
    let expiry: Double
    let notBefore: Double?
    let issuer: String?
    let audiences: [String]
    let subject: String?
    let publish: [String]
    let subscribe: [String]
    let manage: Bool

    /// Reads `payload`; `unauthorized` naming the claim that is not as RFC 7519 or the
    /// contract says.
    init(_ payload: JSONObject) throws(ProtocolError) {
        guard case .number(let expiry)? = payload["exp"], expiry.isFinite else {
            throw JWTVerifier.malformed("exp is missing or not a number")
        }
        self.expiry = expiry
        switch payload["nbf"] {
        case nil: notBefore = nil
        case .number(let seconds)? where seconds.isFinite: notBefore = seconds
        default: throw JWTVerifier.malformed("nbf is not a number")
        }
        issuer = try Self.string(payload["iss"], "iss")
        subject = try Self.string(payload["sub"], "sub")
        switch payload["aud"] {
        case nil: audiences = []
        case .string(let audience)?: audiences = [audience]
        case .array(let items)?:
            audiences = try items.map { item throws(ProtocolError) in
                guard case .string(let audience) = item else {
                    throw JWTVerifier.malformed("aud is not a string or a list of strings")
                }
                return audience
            }
        default: throw JWTVerifier.malformed("aud is not a string or a list of strings")
        }
        guard let rights = payload["runnel"] else {
            (publish, subscribe, manage) = ([], [], false)
            return
        }
        guard case .object(let table) = rights else { throw JWTVerifier.malformed("runnel is not an object") }
        for key in table.keys where !["publish", "subscribe", "manage"].contains(key) {
            throw JWTVerifier.malformed("runnel.\(key) is not a right (publish, subscribe, manage)")
        }
        publish = try Self.patterns(table["publish"], "runnel.publish")
        subscribe = try Self.patterns(table["subscribe"], "runnel.subscribe")
        switch table["manage"] {
        case nil: manage = false
        case .bool(let flag)?: manage = flag
        default: throw JWTVerifier.malformed("runnel.manage is not true or false")
        }
    }

    private static func string(_ value: JSONValue?, _ name: String) throws(ProtocolError) -> String? {
        switch value {
        case nil: return nil
        case .string(let text)?: return text
        default: throw JWTVerifier.malformed("\(name) is not a string")
        }
    }

    /// Subject names and patterns, each checked as a `[[tokens]]` list's are.
    private static func patterns(_ value: JSONValue?, _ name: String) throws(ProtocolError) -> [String] {
        guard let value else { return [] }
        guard case .array(let items) = value else { throw JWTVerifier.malformed("\(name) is not a list") }
        var patterns: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let pattern) = item else {
                throw JWTVerifier.malformed("\(name)[\(index)] is not a string")
            }
            if let problem = SubjectName.problem(withPattern: pattern) {
                throw JWTVerifier.malformed("\(name)[\(index)]: \(problem)")
            }
            patterns.append(pattern)
        }
        return patterns
    }
}
