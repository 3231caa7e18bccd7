extension ServerConfig {
    /// `key`'s current value written as in `runneld.toml` (strings quoted), for summaries and
    /// reload logs. Auth tokens and JWT secrets are never shown, only counted. `subjects` gives a count; see
    /// `SubjectDefinition.description` for each.
    public func renderedValue(of key: ConfigKey) -> String {
        switch key {
        case .listen: return TOMLConfigReader.quote(listen.description)
        case .httpListen: return TOMLConfigReader.quote(httpListen?.description ?? "")
        case .maxBodyBytes: return String(maxBodyBytes)
        case .httpAllowedOrigins: return "[\(httpAllowedOrigins.map(TOMLConfigReader.quote).joined(separator: ", "))]"
        case .httpStaticDir: return TOMLConfigReader.quote(httpStaticDir ?? "")
        case .maxLineBytes: return String(maxLineBytes)
        case .maxPendingBytes: return String(maxPendingBytes)
        case .maxExprBytes: return String(maxExprBytes)
        case .maxDepth: return String(maxDepth)
        case .maxConnections: return String(maxConnections)
        case .maxSubscriptionsPerConnection: return String(maxSubscriptionsPerConnection)
        case .slowConsumer: return TOMLConfigReader.quote(slowConsumer.rawValue)
        case .autoCreate: return autoCreate ? "true" : "false"
        case .compression: return compression ? "true" : "false"
        case .defaultReplayCapacity: return String(defaultReplayCapacity)
        case .authTokens: return authTokens.isEmpty ? "[] (no auth)" : "[\(authTokens.count) token(s), hidden]"
        case .maxStages: return String(maxStages)
        case .maxBufferValues: return String(maxBufferValues)
        case .maxEvalSteps: return String(maxEvalSteps)
        case .maxEvalBytes: return String(maxEvalBytes)
        case .maxEvalStepsPerSecond: return String(maxEvalStepsPerSecond)
        case .maxEvalStepsBurst: return String(maxEvalStepsBurst)
        case .tokenEvalStepsPerSecond: return String(tokenEvalStepsPerSecond)
        case .tokenEvalStepsBurst: return String(tokenEvalStepsBurst)
        case .maxPublishEvalMs: return String(maxPublishEvalMs)
        case .logLevel: return TOMLConfigReader.quote(logLevel.rawValue)
        case .shutdownTimeout: return Self.renderSeconds(shutdownTimeout)
        case .loops: return String(loops)
        case .maxSubjects: return String(maxSubjects)
        case .dataDir: return dataDir.map(TOMLConfigReader.quote) ?? "(none: no durable subjects)"
        case .fsync: return TOMLConfigReader.quote(fsync.rawValue)
        case .loginTimeout: return Self.renderSeconds(loginTimeout)
        case .maxConnectionsPerAddress: return String(maxConnectionsPerAddress)
        case .maxSubscriptionBytes: return String(maxSubscriptionBytes)
        case .maxReplayBytes: return String(maxReplayBytes)
        case .maxMapKeys: return String(maxMapKeys)
        case .maxRetainedBytes: return String(maxRetainedBytes)
        case .softPendingBytes:
            return softPendingBytes > maxPendingBytes
                ? "\(softPendingBytes) (applies as \(softPendingLimit): max_pending_bytes)" : String(softPendingBytes)
        case .softPendingSeconds: return Self.renderSeconds(softPendingSeconds)
        case .tlsListen: return TOMLConfigReader.quote(tlsListen?.description ?? "")
        case .httpsListen: return TOMLConfigReader.quote(httpsListen?.description ?? "")
        case .tlsCertFile: return TOMLConfigReader.quote(tlsCertFile ?? "")
        case .tlsKeyFile: return TOMLConfigReader.quote(tlsKeyFile ?? "")
        case .tlsCAFile: return TOMLConfigReader.quote(tlsCAFile ?? "")
        case .tlsMinVersion: return TOMLConfigReader.quote(tlsMinVersion.rawValue)
        case .jwtSecrets: return jwtSecrets.isEmpty ? "[]" : "[\(jwtSecrets.count) secret(s), hidden]"
        case .jwtPublicKeys: return "[\(jwtPublicKeys.map(TOMLConfigReader.quote).joined(separator: ", "))]"
        case .jwtJWKSFile: return TOMLConfigReader.quote(jwtJWKSFile ?? "")
        case .jwtIssuer: return TOMLConfigReader.quote(jwtIssuer ?? "")
        case .jwtAudience: return TOMLConfigReader.quote(jwtAudience ?? "")
        case .jwtLeeway: return String(jwtLeeway)
        case .clusterNATS, .clusterName, .nodeName, .clusterReplicas, .clusterToken, .clusterUser, .clusterPassword,
            .clusterConnectTimeout, .clusterSendBufferBytes:
            return renderedClusterValue(of: key)
        case .subjects: return "\(subjects.count) subject(s)"
        case .tokens: return tokens.isEmpty ? "[]" : "[\(tokens.count) token table(s), hidden]"
        }
    }

    /// The effective configuration, one `key = value` line per key, then one line per
    /// configured subject: what `runneld --check-config` prints and the server logs at start.
    public var summaryLines: [String] {
        var lines = ConfigKey.allCases.map { "\($0.rawValue) = \(renderedValue(of: $0))" }
        lines += subjects.map { "subject \($0)" }
        return lines
    }

    /// `shutdown_timeout` as seconds, the unit the file uses.
    public var shutdownTimeoutSeconds: Double {
        let (seconds, attoseconds) = shutdownTimeout.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    package static func renderSeconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return String(seconds) }
        return "\(Double(seconds) + Double(attoseconds) / 1e18)"
    }
}
