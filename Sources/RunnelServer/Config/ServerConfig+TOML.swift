import Logging
import RunnelJSON
import RunnelProtocol
import TOMLKit

extension ServerConfig {
    /// Parses a `runneld.toml` document strictly: unknown keys, wrong types, out-of-range
    /// values, bad or duplicate subject names are all errors naming their key. Keys left out
    /// keep their defaults. `origin` prefixes every error (`config /etc/runnel/runneld.toml`).
    public static func parse(toml text: String, origin: String = "config") throws(ConfigError) -> ServerConfig {
        if text.utf8.contains(0) {
            throw ConfigError(origin: origin, key: nil, problem: "holds a NUL byte; it is not a TOML document")
        }
        let root: TOMLTable
        do {
            root = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            let position = error.source.begin
            throw ConfigError(
                origin: origin, key: nil,
                problem: "line \(position.line), column \(position.column): \(error.description)")
        } catch {
            throw ConfigError(origin: origin, key: nil, problem: "not a TOML document: \(error)")
        }
        // TOMLKit's values point into `root`'s nodes: keep it alive while they are read.
        return try withExtendedLifetime(root) { () throws(ConfigError) -> ServerConfig in
            try TOMLConfigReader(origin: origin).read(root)
        }
    }

    /// Reads and parses the file at `path`; errors start with `config PATH`.
    public static func load(path: String) throws(ConfigError) -> ServerConfig {
        let origin = "config \(path)"
        let text: String
        switch ConfigFileReader.readText(path: path) {
        case .success(let contents): text = contents
        case .failure(let problem): throw ConfigError(origin: origin, key: nil, problem: problem.text)
        }
        return try parse(toml: text, origin: origin)
    }
}

/// Turns a parsed TOML root table into a `ServerConfig`, one key at a time.
///
/// Used only inside `ServerConfig.parse` while the root table is alive.
struct TOMLConfigReader {
    let origin: String

    func read(_ root: TOMLTable) throws(ConfigError) -> ServerConfig {
        var values: [ConfigKey: any TOMLValueConvertible] = [:]
        for (name, value) in root {
            guard let key = ConfigKey(rawValue: name) else {
                throw ConfigError(origin: origin, key: name, problem: "unknown key")
            }
            values[key] = value
        }
        var config = ServerConfig()
        // Subjects last: a replay subject's default capacity is `default_replay_capacity`.
        // Tokens after `auth_tokens`, whose tokens they must not repeat.
        for key in ConfigKey.allCases where key != .subjects && key != .tokens {
            guard let value = values[key] else { continue }
            try apply(key, value, to: &config)
        }
        if let value = values[.subjects] {
            config.subjects = try subjects(
                value, defaultCapacity: config.defaultReplayCapacity, maxMapKeys: config.maxMapKeys)
            // A cluster keeps durable subjects in JetStream's files.
            if let durable = config.subjects.first(where: \.durable), config.dataDir == nil,
                !config.cluster.isClustered
            {
                throw error(
                    "subjects", "subject \"\(durable.name)\" is durable, which needs data_dir (or cluster_nats)")
            }
            if config.subjects.count > config.maxSubjects {
                throw error(
                    "subjects",
                    "\(config.subjects.count) subjects exceed max_subjects (\(config.maxSubjects))")
            }
        }
        if let value = values[.tokens] { config.tokens = try tokens(value, authTokens: config.authTokens) }
        if let problem = config.tlsProblem { throw error(problem.key, problem.text) }
        config.jwtKeys = try jwtKeys(of: config)
        return config
    }

    private func apply(_ key: ConfigKey, _ value: any TOMLValueConvertible, to config: inout ServerConfig)
        throws(ConfigError)
    {
        switch key {
        case .listen:
            guard let text = value.string else {
                throw error(key.rawValue, "must be a string HOST:PORT, got \(Self.describe(value))")
            }
            switch ListenAddress.parse(text) {
            case .success(let address): config.listen = address
            case .failure(let problem): throw error(key.rawValue, problem.description)
            }
        case .httpListen:
            guard let text = value.string else {
                throw error(key.rawValue, "must be a string HOST:PORT or \"\" (off), got \(Self.describe(value))")
            }
            switch ListenAddress.parseOptional(text) {
            case .success(let address): config.httpListen = address
            case .failure(let problem): throw error(key.rawValue, problem.description)
            }
        case .maxBodyBytes: config.maxBodyBytes = try integer(key, value)
        case .httpAllowedOrigins:
            guard value.type == .array, let array = value.array else {
                throw error(
                    key.rawValue,
                    "must be an array of origins like \"https://example.com\", got \(Self.describe(value))")
            }
            var origins: [String] = []
            for (index, element) in array.enumerated() {
                guard let origin = element.string, HTTPOrigin.isWellFormed(origin) else {
                    throw error(
                        "\(key.rawValue)[\(index)]",
                        "must be an origin SCHEME://HOST[:PORT] with no path, got \(Self.describe(element))")
                }
                origins.append(origin)
            }
            config.httpAllowedOrigins = origins
        case .httpStaticDir:
            guard let text = value.string, !text.utf8.contains(0) else {
                throw error(key.rawValue, "must be a directory's path (\"\" for none), got \(Self.describe(value))")
            }
            if !text.isEmpty, let problem = ConfigFileReader.directoryProblem(path: text) {
                throw error(key.rawValue, "\(Self.quote(text)): \(problem.text)")
            }
            config.httpStaticDir = text.isEmpty ? nil : text
        case .maxLineBytes: config.maxLineBytes = try integer(key, value)
        case .maxPendingBytes: config.maxPendingBytes = try integer(key, value)
        case .maxExprBytes: config.maxExprBytes = try integer(key, value)
        case .maxDepth: config.maxDepth = try integer(key, value)
        case .maxConnections: config.maxConnections = try integer(key, value)
        case .maxSubscriptionsPerConnection: config.maxSubscriptionsPerConnection = try integer(key, value)
        case .defaultReplayCapacity: config.defaultReplayCapacity = try integer(key, value)
        case .maxStages: config.maxStages = try integer(key, value)
        case .maxBufferValues: config.maxBufferValues = try integer(key, value)
        case .maxEvalSteps: config.maxEvalSteps = try integer(key, value)
        case .maxEvalBytes: config.maxEvalBytes = try integer(key, value)
        case .maxEvalStepsPerSecond: config.maxEvalStepsPerSecond = try integer(key, value)
        case .maxEvalStepsBurst: config.maxEvalStepsBurst = try integer(key, value)
        case .tokenEvalStepsPerSecond: config.tokenEvalStepsPerSecond = try integer(key, value)
        case .tokenEvalStepsBurst: config.tokenEvalStepsBurst = try integer(key, value)
        case .maxPublishEvalMs: config.maxPublishEvalMs = try integer(key, value)
        case .maxSubjects: config.maxSubjects = try integer(key, value)
        case .slowConsumer:
            guard let text = value.string, let policy = SlowConsumerPolicy(rawValue: text) else {
                throw error(key.rawValue, "must be \(SlowConsumerPolicy.namesForErrors), got \(Self.describe(value))")
            }
            config.slowConsumer = policy
        case .autoCreate: config.autoCreate = try boolean(key, value)
        case .compression: config.compression = try boolean(key, value)
        case .authTokens:
            guard value.type == .array, let array = value.array else {
                throw error(key.rawValue, "must be an array of non-empty strings, got \(Self.describe(value))")
            }
            var tokens: [String] = []
            for (index, element) in array.enumerated() {
                guard let token = element.string, !token.isEmpty else {
                    throw error(
                        "\(key.rawValue)[\(index)]", "must be a non-empty string, got \(Self.describe(element))")
                }
                tokens.append(token)
            }
            config.authTokens = tokens
        case .logLevel:
            guard let text = value.string, let level = Logger.Level(rawValue: text) else {
                throw error(key.rawValue, "must be one of \(LogLevelNames.list), got \(Self.describe(value))")
            }
            config.logLevel = level
        case .shutdownTimeout: config.shutdownTimeout = try duration(key, value)
        case .loops: config.loops = try integer(key, value)
        case .loginTimeout: config.loginTimeout = try duration(key, value)
        case .maxConnectionsPerAddress: config.maxConnectionsPerAddress = try integer(key, value)
        case .maxSubscriptionBytes: config.maxSubscriptionBytes = try integer(key, value)
        case .maxReplayBytes: config.maxReplayBytes = try integer(key, value)
        case .maxMapKeys: config.maxMapKeys = try integer(key, value)
        case .maxRetainedBytes: config.maxRetainedBytes = try integer(key, value)
        case .softPendingBytes: config.softPendingBytes = try integer(key, value)
        case .softPendingSeconds: config.softPendingSeconds = try duration(key, value)
        case .dataDir:
            guard let text = value.string, !text.isEmpty, !text.utf8.contains(0) else {
                throw error(key.rawValue, "must be a directory's path, got \(Self.describe(value))")
            }
            config.dataDir = text
        case .fsync:
            let names = FsyncMode.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            guard let text = value.string, let mode = FsyncMode(rawValue: text) else {
                throw error(key.rawValue, "must be one of \(names), got \(Self.describe(value))")
            }
            config.fsync = mode
        case .tlsListen, .httpsListen, .tlsCertFile, .tlsKeyFile, .tlsCAFile, .tlsMinVersion:
            try applyTLS(key, value, to: &config)
        case .jwtSecrets, .jwtPublicKeys, .jwtJWKSFile, .jwtIssuer, .jwtAudience:
            try applyJWT(key, value, to: &config)
        case .jwtLeeway: config.jwtLeeway = try integer(key, value)
        case .clusterNATS, .clusterName, .nodeName, .clusterReplicas, .clusterToken, .clusterUser, .clusterPassword,
            .clusterConnectTimeout, .clusterSendBufferBytes:
            try applyCluster(key, value, to: &config)
        case .subjects, .tokens:
            break  // Read by `read(_:)` after the keys they depend on.
        }
    }

    func boolean(_ key: ConfigKey, _ value: any TOMLValueConvertible) throws(ConfigError) -> Bool {
        guard value.type == .bool, let flag = value.bool else {
            throw error(key.rawValue, "must be true or false, got \(Self.describe(value))")
        }
        return flag
    }

    func integer(_ key: ConfigKey, _ value: any TOMLValueConvertible) throws(ConfigError) -> Int {
        let range = key.integerRange!
        guard value.type == .int, let number = value.int, range.contains(number) else {
            throw error(
                key.rawValue,
                "must be an integer between \(range.lowerBound) and \(range.upperBound), got \(Self.describe(value))")
        }
        return number
    }

    /// A number of seconds between 0 and `ConfigKey.maxTimeoutSeconds`, to the millisecond.
    func duration(_ key: ConfigKey, _ value: any TOMLValueConvertible) throws(ConfigError) -> Duration {
        let limit = ConfigKey.maxTimeoutSeconds
        guard let seconds = Self.number(value), seconds >= 0, seconds <= limit else {
            throw error(
                key.rawValue, "must be a number of seconds between 0 and \(Int(limit)), got \(Self.describe(value))")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// An integer or float as a `Double`; nil for any other type.
    static func number(_ value: any TOMLValueConvertible) -> Double? {
        value.type == .int ? value.int.map(Double.init) : value.type == .double ? value.double : nil
    }

    private func subjects(_ value: any TOMLValueConvertible, defaultCapacity: Int, maxMapKeys: Int)
        throws(ConfigError) -> [SubjectDefinition]
    {
        guard value.type == .array, let array = value.array else {
            throw error("subjects", "must be an array of tables ([[subjects]]), got \(Self.describe(value))")
        }
        var definitions: [SubjectDefinition] = []
        var indexByName: [String: Int] = [:]
        for (index, element) in array.enumerated() {
            let prefix = "subjects[\(index)]"
            guard element.type == .table, let table = element.table else {
                throw error(prefix, "must be a table with a name, got \(Self.describe(element))")
            }
            let definition = try subject(
                table, prefix: prefix, defaultCapacity: defaultCapacity, maxMapKeys: maxMapKeys)
            if let earlier = indexByName[definition.name] {
                throw error(
                    "\(prefix).name", "duplicate subject \"\(definition.name)\" (also subjects[\(earlier)])")
            }
            indexByName[definition.name] = index
            definitions.append(definition)
        }
        return definitions
    }

    private func subject(_ table: TOMLTable, prefix: String, defaultCapacity: Int, maxMapKeys: Int)
        throws(ConfigError) -> SubjectDefinition
    {
        var fields: [String: any TOMLValueConvertible] = [:]
        let known = ["name", "kind", "capacity", "retain_s", "value", "ttl_s", "max_keys", "durable", "slow_consumer"]
        for (name, value) in table {
            guard known.contains(name) else {
                throw error("\(prefix).\(name)", "unknown key (a subject takes \(known.joined(separator: ", ")))")
            }
            fields[name] = value
        }
        guard let nameValue = fields["name"] else {
            throw error("\(prefix).name", "missing: every [[subjects]] table needs a name")
        }
        guard let name = nameValue.string else {
            throw error("\(prefix).name", "must be a string, got \(Self.describe(nameValue))")
        }
        if let problem = SubjectName.problem(withName: name) {
            throw error("\(prefix).name", "\(problem), got \(Self.quote(name))")
        }
        var kind = SubjectKind.subject
        if let kindValue = fields["kind"] {
            let names = SubjectKind.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            guard let text = kindValue.string, let parsed = SubjectKind(rawValue: text) else {
                throw error("\(prefix).kind", "must be one of \(names), got \(Self.describe(kindValue))")
            }
            kind = parsed
        }
        var capacity: Int? = nil
        if let capacityValue = fields["capacity"] {
            guard kind == .replay else {
                throw error(
                    "\(prefix).capacity", "only a replay subject takes a capacity (this one is \(kind.rawValue))")
            }
            let limit = ConfigKey.maxReplayCapacity
            guard capacityValue.type == .int, let number = capacityValue.int, (1...limit).contains(number) else {
                throw error(
                    "\(prefix).capacity",
                    "must be an integer between 1 and \(limit), got \(Self.describe(capacityValue))")
            }
            capacity = number
        } else if kind == .replay {
            capacity = defaultCapacity
        }
        var retainMilliseconds: Int64? = nil
        if let retainValue = fields["retain_s"] {
            guard kind == .replay else {
                throw error(
                    "\(prefix).retain_s", "only a replay subject takes retain_s (this one is \(kind.rawValue))")
            }
            guard let seconds = Self.number(retainValue), let milliseconds = RetainAge.milliseconds(seconds: seconds)
            else {
                throw error(
                    "\(prefix).retain_s",
                    "must be \(RetainAge.requirement), got \(Self.describe(retainValue))")
            }
            retainMilliseconds = milliseconds
        }
        var initialValue: String? = nil
        if let value = fields["value"] {
            guard kind == .behavior else {
                throw error("\(prefix).value", "only a behavior subject takes a value (this one is \(kind.rawValue))")
            }
            switch TOMLValueJSON.render(value) {
            case .success(let json): initialValue = json
            case .failure(let problem): throw error("\(prefix).value", problem.text)
            }
        } else if kind == .behavior {
            initialValue = "null"
        }
        var durable = false
        if let durableValue = fields["durable"] {
            guard durableValue.type == .bool, let flag = durableValue.bool else {
                throw error("\(prefix).durable", "must be true or false, got \(Self.describe(durableValue))")
            }
            guard !flag || kind != .subject else {
                throw error("\(prefix).durable", "only replay, behavior and map subjects can be durable")
            }
            durable = flag
        }
        var slowConsumer: SlowConsumerPolicy? = nil
        if let policyValue = fields["slow_consumer"] {
            guard let text = policyValue.string, let policy = SlowConsumerPolicy(rawValue: text) else {
                throw error(
                    "\(prefix).slow_consumer",
                    "must be \(SlowConsumerPolicy.namesForErrors), got \(Self.describe(policyValue))")
            }
            slowConsumer = policy
        }
        let (ttl, maxKeys) = try mapShape(fields, kind: kind, prefix: prefix, maxMapKeys: maxMapKeys)
        return SubjectDefinition(
            name: name, kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds ?? ttl,
            maxKeys: maxKeys, initialValueJSON: initialValue, durable: durable, slowConsumer: slowConsumer)
    }

    /// A map table's `ttl_s` (milliseconds) and `max_keys` (`max_map_keys` when absent); nils
    /// for the other kinds, which take neither.
    private func mapShape(
        _ fields: [String: any TOMLValueConvertible], kind: SubjectKind, prefix: String, maxMapKeys: Int
    ) throws(ConfigError) -> (ttl: Int64?, maxKeys: Int?) {
        guard kind == .map else {
            if let key = ["ttl_s", "max_keys"].first(where: { fields[$0] != nil }) {
                throw error("\(prefix).\(key)", "only a map takes \(key) (this one is \(kind.rawValue))")
            }
            return (nil, nil)
        }
        var ttl: Int64?
        if let value = fields["ttl_s"] {
            guard let seconds = Self.number(value), let milliseconds = RetainAge.milliseconds(seconds: seconds) else {
                throw error("\(prefix).ttl_s", "must be \(RetainAge.requirement), got \(Self.describe(value))")
            }
            ttl = milliseconds
        }
        guard let value = fields["max_keys"] else { return (ttl, maxMapKeys) }
        guard value.type == .int, let number = value.int, (1...maxMapKeys).contains(number) else {
            throw error(
                "\(prefix).max_keys",
                "must be an integer from 1 to \(maxMapKeys) (max_map_keys), got \(Self.describe(value))")
        }
        return (ttl, number)
    }

    func error(_ key: String, _ problem: String) -> ConfigError {
        ConfigError(origin: origin, key: key, problem: problem)
    }

    /// A short rendering of a value for "got ..." messages.
    static func describe(_ value: any TOMLValueConvertible) -> String {
        switch value.type {
        case .string: return "the string " + quote(value.string ?? "")
        case .int: return String(value.int ?? 0)
        case .double: return "\(value.double ?? 0)"
        case .bool: return (value.bool ?? false) ? "true" : "false"
        case .table: return "a table"
        case .array: return "an array"
        case .date, .time, .dateTime: return "the date/time \(value.debugDescription)"
        }
    }

    static func quote(_ text: String) -> String {
        var output = ""
        TOMLValueJSON.appendString(text, to: &output)
        return output
    }
}
