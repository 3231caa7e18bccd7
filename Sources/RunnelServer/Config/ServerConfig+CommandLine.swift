import Logging

extension ServerConfig {
    /// The origin named in errors about command-line options.
    public static let commandLineOrigin = "command line"

    /// The effective configuration for `runneld`'s options: the file at `configPath` (or the
    /// built-in defaults when `nil`), then `--listen`, `--http-listen`, `--tls-listen`,
    /// `--https-listen`, `--loops` and `--log-level`, which override it.
    public static func resolve(
        configPath: String?, listen: String?, httpListen: String? = nil, tlsListen: String? = nil,
        httpsListen: String? = nil, loops: String? = nil, logLevel: String?
    ) throws(ConfigError) -> ServerConfig {
        var config = ServerConfig()
        if let configPath { config = try load(path: configPath) }
        if let listen { try config.overrideListen(listen) }
        if let httpListen { try config.overrideHTTPListen(httpListen) }
        if let tlsListen { try config.overrideTLSListen(tlsListen, option: "--tls-listen", \.tlsListen) }
        if let httpsListen { try config.overrideTLSListen(httpsListen, option: "--https-listen", \.httpsListen) }
        if let loops { try config.overrideLoops(loops) }
        if let logLevel { try config.overrideLogLevel(logLevel) }
        if tlsListen != nil || httpsListen != nil, let problem = config.tlsProblem {
            throw ConfigError(
                origin: configPath.map { "config \($0)" } ?? "config", key: problem.key, problem: problem.text)
        }
        return config
    }

    /// Applies `--listen HOST:PORT`.
    public mutating func overrideListen(_ text: String) throws(ConfigError) {
        switch ListenAddress.parse(text) {
        case .success(let address): listen = address
        case .failure(let problem):
            throw ConfigError(origin: Self.commandLineOrigin, key: "--listen", problem: problem.description)
        }
    }

    /// Applies `--http-listen HOST:PORT` (`""` turns the HTTP front door off).
    public mutating func overrideHTTPListen(_ text: String) throws(ConfigError) {
        switch ListenAddress.parseOptional(text) {
        case .success(let address): httpListen = address
        case .failure(let problem):
            throw ConfigError(origin: Self.commandLineOrigin, key: "--http-listen", problem: problem.description)
        }
    }

    /// Applies `--loops N`, in the range the file's `loops` takes.
    public mutating func overrideLoops(_ text: String) throws(ConfigError) {
        let range = ConfigKey.loops.integerRange!
        guard let count = Int(text), range.contains(count) else {
            throw ConfigError(
                origin: Self.commandLineOrigin, key: "--loops",
                problem:
                    "must be an integer from \(range.lowerBound) to \(range.upperBound) (0: one per CPU), got \(TOMLConfigReader.quote(text))"
            )
        }
        loops = count
    }

    /// Applies `--log-level LEVEL`.
    public mutating func overrideLogLevel(_ text: String) throws(ConfigError) {
        guard let level = Logger.Level(rawValue: text) else {
            throw ConfigError(
                origin: Self.commandLineOrigin, key: "--log-level",
                problem: "must be one of \(LogLevelNames.list), got \(TOMLConfigReader.quote(text))")
        }
        logLevel = level
    }
}
