extension ServerConfig {
    /// What a reload from `old` to `self` changes, in `ConfigKey` order, then one change per
    /// added, removed or redefined subject. Empty when nothing differs.
    ///
    /// `listen` needs a restart; every other top-level key is live. New subjects are created
    /// live (`addedSubjects(since:)` lists them); a subject whose `slow_consumer` alone
    /// changed gets the new policy live; removed or otherwise changed ones are reported as
    /// ignored, because subjects and their values outlive the config that declared them.
    public func changes(from old: ServerConfig) -> [ConfigChange] {
        var changes: [ConfigChange] = []
        for key in ConfigKey.allCases where key != .subjects {
            let before = old.renderedValue(of: key)
            let after = renderedValue(of: key)
            // Tokens and secrets render hidden, and key files may change under the same path:
            // compare them directly.
            let differs =
                switch key {
                case .authTokens: old.authTokens != authTokens
                case .tokens: old.tokens != tokens
                case .clusterToken: old.cluster.token != cluster.token
                case .clusterPassword: old.cluster.password != cluster.password
                case .jwtSecrets, .jwtPublicKeys, .jwtJWKSFile:
                    before != after || old.jwtKeys(from: key) != jwtKeys(from: key)
                default: before != after
                }
            guard differs else { continue }
            changes.append(
                ConfigChange(
                    key: key.rawValue, oldValue: before, newValue: after,
                    applicability: key.isLive ? .live : .needsRestart))
        }
        let oldByName = Dictionary(old.subjects.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let newNames = Set(subjects.map(\.name))
        for subject in subjects {
            let key = "\(ConfigKey.subjects.rawValue).\(subject.name)"
            if let previous = oldByName[subject.name] {
                if previous != subject {
                    changes.append(
                        ConfigChange(
                            key: key, oldValue: previous.description, newValue: subject.description,
                            applicability: subject.differsOnlyInSlowConsumer(from: previous) ? .live : .ignored))
                }
            } else {
                changes.append(
                    ConfigChange(key: key, oldValue: "(none)", newValue: subject.description, applicability: .live))
            }
        }
        for subject in old.subjects where !newNames.contains(subject.name) {
            changes.append(
                ConfigChange(
                    key: "\(ConfigKey.subjects.rawValue).\(subject.name)", oldValue: subject.description,
                    newValue: "(none)", applicability: .ignored))
        }
        return changes
    }

    /// The subjects `self` declares that `old` did not: the ones a reload creates.
    public func addedSubjects(since old: ServerConfig) -> [SubjectDefinition] {
        let oldNames = Set(old.subjects.map(\.name))
        return subjects.filter { !oldNames.contains($0.name) }
    }
}
