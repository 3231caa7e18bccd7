import RunnelCrypto
import RunnelProtocol
import TOMLKit

/// `[[tokens]]`: per-token permissions (docs/protocol.md, "Permissions per token").
extension TOMLConfigReader {
    private static let tokenKeys = ["token", "sha256", "publish", "subscribe", "manage"]

    /// The tables of `[[tokens]]`, checked; a token given twice (here or in `auth_tokens`,
    /// as itself or as a digest) is an error naming both places.
    func tokens(_ value: any TOMLValueConvertible, authTokens: [String]) throws(ConfigError) -> [TokenDefinition] {
        guard value.type == .array, let array = value.array else {
            throw error("tokens", "must be an array of tables ([[tokens]]), got \(Self.describe(value))")
        }
        var placeByDigest: [[UInt8]: String] = [:]
        for (index, token) in authTokens.enumerated() { placeByDigest[TokenDigest.of(token)] = "auth_tokens[\(index)]" }
        var definitions: [TokenDefinition] = []
        for (index, element) in array.enumerated() {
            let prefix = "tokens[\(index)]"
            guard element.type == .table, let table = element.table else {
                throw error(prefix, "must be a table with a token or sha256, got \(Self.describe(element))")
            }
            let definition = try token(table, prefix: prefix)
            if let earlier = placeByDigest[definition.digest] {
                throw error(prefix, "the same token as \(earlier)")
            }
            placeByDigest[definition.digest] = prefix
            definitions.append(definition)
        }
        return definitions
    }

    private func token(_ table: TOMLTable, prefix: String) throws(ConfigError) -> TokenDefinition {
        var fields: [String: any TOMLValueConvertible] = [:]
        for (name, value) in table {
            guard Self.tokenKeys.contains(name) else {
                throw error(
                    "\(prefix).\(name)", "unknown key (a token takes token or sha256, publish, subscribe, manage)")
            }
            fields[name] = value
        }
        let secret: TokenDefinition.Secret
        switch (fields["token"], fields["sha256"]) {
        case (nil, nil):
            throw error(prefix, "needs token (the token itself) or sha256 (its hex SHA-256 digest)")
        case (.some, .some):
            throw error(prefix, "has both token and sha256; give one")
        case (.some(let value), nil):
            guard let text = value.string, !text.isEmpty else {
                throw error("\(prefix).token", "must be a non-empty string, got \(Self.describe(value))")
            }
            secret = .token(text)
        case (nil, .some(let value)):
            guard let text = value.string, TokenDigest.parse(hex: text) != nil else {
                throw error(
                    "\(prefix).sha256",
                    "must be 64 hex digits (the SHA-256 digest of the token), got \(Self.describe(value))")
            }
            secret = .sha256(text)
        }
        var manage = false
        if let value = fields["manage"] {
            guard value.type == .bool, let flag = value.bool else {
                throw error("\(prefix).manage", "must be true or false, got \(Self.describe(value))")
            }
            manage = flag
        }
        return TokenDefinition(
            secret: secret, publish: try patterns(fields["publish"], key: "\(prefix).publish"),
            subscribe: try patterns(fields["subscribe"], key: "\(prefix).subscribe"), manage: manage)
    }

    /// A list of subject names and patterns (`*`, `>`); absent is none.
    private func patterns(_ value: (any TOMLValueConvertible)?, key: String) throws(ConfigError) -> [String] {
        guard let value else { return [] }
        guard value.type == .array, let array = value.array else {
            throw error(key, "must be an array of subjects or patterns, got \(Self.describe(value))")
        }
        var patterns: [String] = []
        for (index, element) in array.enumerated() {
            guard let text = element.string else {
                throw error("\(key)[\(index)]", "must be a subject or pattern string, got \(Self.describe(element))")
            }
            if let problem = SubjectName.problem(withPattern: text) {
                throw error("\(key)[\(index)]", "\(problem), got \(Self.quote(text))")
            }
            patterns.append(text)
        }
        return patterns
    }
}
