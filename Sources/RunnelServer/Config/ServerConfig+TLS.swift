import RunnelTLS
import TOMLKit

extension ServerConfig {
    /// Whether a TLS listener is configured (`tls_listen` or `https_listen`).
    public var servesTLS: Bool { tlsListen != nil || httpsListen != nil }

    /// What is wrong with the TLS keys taken together, if anything: a TLS listener needs a
    /// certificate and its key. (Whether the files load is checked when the listeners open,
    /// and by `runneld --check-config`.)
    var tlsProblem: (key: String, text: String)? {
        guard servesTLS else { return nil }
        let listenerKey = tlsListen != nil ? ConfigKey.tlsListen.rawValue : ConfigKey.httpsListen.rawValue
        guard tlsCertFile != nil, tlsKeyFile != nil else {
            return (listenerKey, "a TLS listener needs tls_cert_file and tls_key_file (PEM certificate chain and key)")
        }
        return nil
    }

    /// Applies `--tls-listen` or `--https-listen HOST:PORT` (`""` turns it off).
    mutating func overrideTLSListen(
        _ text: String, option: String, _ field: WritableKeyPath<ServerConfig, ListenAddress?>
    ) throws(ConfigError) {
        switch ListenAddress.parseOptional(text) {
        case .success(let address): self[keyPath: field] = address
        case .failure(let problem):
            throw ConfigError(origin: Self.commandLineOrigin, key: option, problem: problem.description)
        }
    }

    /// A TLS context from the configured files, for the TLS listeners: built at start and again
    /// on every reload (the files are re-read even when their paths did not change).
    public func makeTLSContext(onFailure: (@Sendable (String) -> Void)? = nil) throws(TLSError) -> TLSContext {
        guard let tlsCertFile, let tlsKeyFile else { throw TLSError("tls_cert_file and tls_key_file are not set") }
        return try TLSContext.server(
            certificateFile: tlsCertFile, keyFile: tlsKeyFile, clientCAFile: tlsCAFile, minimumVersion: tlsMinVersion,
            onFailure: onFailure)
    }
}

extension TOMLConfigReader {
    /// Reads one of the TLS keys.
    func applyTLS(_ key: ConfigKey, _ value: any TOMLValueConvertible, to config: inout ServerConfig)
        throws(ConfigError)
    {
        switch key {
        case .tlsListen, .httpsListen:
            guard let text = value.string else {
                throw error(key.rawValue, "must be a string HOST:PORT or \"\" (off), got \(Self.describe(value))")
            }
            switch ListenAddress.parseOptional(text) {
            case .success(let address):
                if key == .tlsListen { config.tlsListen = address } else { config.httpsListen = address }
            case .failure(let problem): throw error(key.rawValue, problem.description)
            }
        case .tlsCertFile, .tlsKeyFile, .tlsCAFile:
            guard let text = value.string, !text.utf8.contains(0) else {
                throw error(key.rawValue, "must be a file's path (\"\" for none), got \(Self.describe(value))")
            }
            let path = text.isEmpty ? nil : text
            switch key {
            case .tlsCertFile: config.tlsCertFile = path
            case .tlsKeyFile: config.tlsKeyFile = path
            default: config.tlsCAFile = path
            }
        case .tlsMinVersion:
            guard let text = value.string, let version = TLSVersion(rawValue: text) else {
                throw error(key.rawValue, "must be \"1.2\" or \"1.3\", got \(Self.describe(value))")
            }
            config.tlsMinVersion = version
        default:
            preconditionFailure("\(key) is not a TLS key")
        }
    }
}
