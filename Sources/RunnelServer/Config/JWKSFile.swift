import RunnelCrypto
import RunnelJSON

/// A JSON Web Key Set (RFC 7517 §5), `{"keys":[...]}`, read into the keys that verify JWTs:
/// `kty` `RSA` (`n`, `e`) for RS256 and `EC` with `crv` `P-256` (`x`, `y`) for ES256, each
/// with its `kid` when it has one. A key whose `alg` names another algorithm, whose `use` is
/// not `sig`, or of another type is an error naming it: the file is the configuration, and
/// a key in it that would silently not be used is a mistake to report.
///
/// Thread rules: pure functions, safe from any thread. Lifetime rule: none (a namespace).
enum JWKSFile {
    /// The keys of the JWKS `text`; `source` prefixes each key's source (`jwt_jwks_file`).
    static func keys(in text: String, source: String) -> Result<[JWTKey], ConfigValueProblem> {
        guard case .object(let set)? = try? JSONParser(maxDepth: 16).parse(text),
            case .array(let entries)? = set["keys"]
        else { return .failure(ConfigValueProblem("not a JWKS (a JSON object with a keys array)")) }
        var keys: [JWTKey] = []
        for (index, entry) in entries.enumerated() {
            do throws(ConfigValueProblem) {
                guard case .object(let members) = entry else { throw ConfigValueProblem("not an object") }
                keys.append(try key(members, source: "\(source) keys[\(index)]"))
            } catch {
                return .failure(ConfigValueProblem("keys[\(index)]: \(error.text)"))
            }
        }
        guard !keys.isEmpty else { return .failure(ConfigValueProblem("holds no key")) }
        return .success(keys)
    }

    private static func key(_ members: JSONObject, source: String) throws(ConfigValueProblem) -> JWTKey {
        let id = try string(members, "kid", required: false)
        if let use = try string(members, "use", required: false), use != "sig" {
            throw ConfigValueProblem("use is \(use), not sig")
        }
        let algorithm = try string(members, "alg", required: false)
        let key: JWTKey
        switch try string(members, "kty", required: true) ?? "" {
        case "RSA":
            let (modulus, exponent) = (try bytes(members, "n"), try bytes(members, "e"))
            key = try loaded { () throws(JWTKeyProblem) in
                try JWTKey(modulus: modulus, exponent: exponent, id: id, source: source)
            }
        case "EC":
            let curve = try string(members, "crv", required: true) ?? ""
            guard curve == "P-256" else { throw ConfigValueProblem("crv \(curve) is not P-256") }
            let (x, y) = (try bytes(members, "x"), try bytes(members, "y"))
            key = try loaded { () throws(JWTKeyProblem) in try JWTKey(x: x, y: y, id: id, source: source) }
        case let type:
            throw ConfigValueProblem("kty \(type) is not RSA or EC (RS256 and ES256 are served)")
        }
        if let algorithm, algorithm != key.algorithm.rawValue {
            throw ConfigValueProblem("alg \(algorithm) does not match the key (it serves \(key.algorithm.rawValue))")
        }
        return key
    }

    /// The key `load` makes, its problem reported as the file's.
    private static func loaded(_ load: () throws(JWTKeyProblem) -> JWTKey) throws(ConfigValueProblem) -> JWTKey {
        do {
            return try load()
        } catch {
            throw ConfigValueProblem(error.description)
        }
    }

    private static func string(_ members: JSONObject, _ name: String, required: Bool) throws(ConfigValueProblem)
        -> String?
    {
        switch members[name] {
        case .string(let text)?: return text
        case nil where !required: return nil
        default: throw ConfigValueProblem("\(name) is missing or not a string")
        }
    }

    private static func bytes(_ members: JSONObject, _ name: String) throws(ConfigValueProblem) -> [UInt8] {
        guard let text = try string(members, name, required: true),
            let bytes = Base64URL.decode(Substring(text).utf8)
        else { throw ConfigValueProblem("\(name) is not base64url") }
        return bytes
    }
}
