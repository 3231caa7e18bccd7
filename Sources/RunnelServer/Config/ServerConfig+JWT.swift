import RunnelCrypto
import TOMLKit

extension ServerConfig {
    /// Whether `other` verifies JWTs exactly as this configuration does: the same keys (by
    /// content, so a key file rewritten under its old path counts as a change), issuer,
    /// audience and leeway.
    func verifiesJWTsAs(_ other: ServerConfig) -> Bool {
        jwtKeys == other.jwtKeys && jwtIssuer == other.jwtIssuer && jwtAudience == other.jwtAudience
            && jwtLeeway == other.jwtLeeway
    }

    /// The loaded keys that `key` (`jwt_secrets`, `jwt_public_keys` or `jwt_jwks_file`) gave.
    func jwtKeys(from key: ConfigKey) -> [JWTKey] {
        jwtKeys.filter { $0.source.hasPrefix(key.rawValue) }
    }
}

extension TOMLConfigReader {
    /// Reads one of the JWT keys but `jwt_leeway`; the keys they name are loaded by `jwtKeys(of:)`.
    func applyJWT(_ key: ConfigKey, _ value: any TOMLValueConvertible, to config: inout ServerConfig)
        throws(ConfigError)
    {
        switch key {
        case .jwtSecrets:
            config.jwtSecrets = try strings(key, value, what: "secrets of at least \(JWTKey.minimumSecretBytes) bytes")
        case .jwtPublicKeys:
            config.jwtPublicKeys = try strings(key, value, what: "PEM files' paths")
        case .jwtJWKSFile, .jwtIssuer, .jwtAudience:
            guard let text = value.string, !text.utf8.contains(0) else {
                throw error(key.rawValue, "must be a string (\"\" for none), got \(Self.describe(value))")
            }
            let setting = text.isEmpty ? nil : text
            switch key {
            case .jwtJWKSFile: config.jwtJWKSFile = setting
            case .jwtIssuer: config.jwtIssuer = setting
            default: config.jwtAudience = setting
            }
        default:
            preconditionFailure("\(key) is not a JWT key")
        }
    }

    /// A list of non-empty strings without NUL bytes.
    private func strings(_ key: ConfigKey, _ value: any TOMLValueConvertible, what: String) throws(ConfigError)
        -> [String]
    {
        guard value.type == .array, let array = value.array else {
            throw error(key.rawValue, "must be an array of \(what), got \(Self.describe(value))")
        }
        var strings: [String] = []
        for (index, element) in array.enumerated() {
            guard let text = element.string, !text.isEmpty, !text.utf8.contains(0) else {
                throw error("\(key.rawValue)[\(index)]", "must be a non-empty string, got \(Self.describe(element))")
            }
            strings.append(text)
        }
        return strings
    }

    /// The keys `config`'s JWT settings name, each file read now; an error names the key and
    /// the file that cannot be used. (So a reload with a bad key file keeps the running
    /// configuration, as any reload error does.)
    func jwtKeys(of config: ServerConfig) throws(ConfigError) -> [JWTKey] {
        var keys: [JWTKey] = []
        for (index, secret) in config.jwtSecrets.enumerated() {
            let source = "\(ConfigKey.jwtSecrets.rawValue)[\(index)]"
            do throws(JWTKeyProblem) {
                keys.append(try JWTKey(secret: Array(secret.utf8), source: source))
            } catch {
                throw self.error(source, error.description)
            }
        }
        for (index, path) in config.jwtPublicKeys.enumerated() {
            let source = "\(ConfigKey.jwtPublicKeys.rawValue)[\(index)]"
            let text = try file(path, key: source)
            do throws(JWTKeyProblem) {
                keys.append(try JWTKey(pem: Array(text.utf8), source: source))
            } catch {
                throw self.error(source, "\(Self.quote(path)): \(error.description)")
            }
        }
        if let path = config.jwtJWKSFile {
            let source = ConfigKey.jwtJWKSFile.rawValue
            switch JWKSFile.keys(in: try file(path, key: source), source: source) {
            case .success(let loaded): keys += loaded
            case .failure(let problem): throw error(source, "\(Self.quote(path)): \(problem.text)")
            }
        }
        return keys
    }

    private func file(_ path: String, key: String) throws(ConfigError) -> String {
        switch ConfigFileReader.readText(path: path) {
        case .success(let text): return text
        case .failure(let problem): throw error(key, "\(Self.quote(path)): \(problem.text)")
        }
    }
}
