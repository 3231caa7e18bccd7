import RunnelProtocol

/// The subjects one right of a token reaches (`publish` or `subscribe` of a `[[tokens]]`
/// table): a list of subject names and patterns, or every subject.
///
/// Matching walks the name's bytes against each pattern without allocating, so a check costs
/// a few comparisons per pattern. Immutable value: safe from any thread.
struct SubjectRights: Sendable, Equatable {
    /// Every subject (an `auth_tokens` token, or a server without tokens).
    let coversEverything: Bool
    let patterns: [SubjectPattern]

    static let everything = SubjectRights(coversEverything: true, patterns: [])
    static let nothing = SubjectRights(coversEverything: false, patterns: [])

    private init(coversEverything: Bool, patterns: [SubjectPattern]) {
        self.coversEverything = coversEverything
        self.patterns = patterns
    }

    /// The subjects `patterns` name (each already checked by `SubjectName.problem(withPattern:)`).
    /// `>` alone is every subject.
    init(_ patterns: [String]) {
        self.patterns = patterns.map(SubjectPattern.init)
        coversEverything = patterns.contains(">")
    }

    /// Whether the subject `name` is among them.
    func permits(_ name: String) -> Bool {
        if coversEverything { return true }
        for pattern in patterns where pattern.matches(name) { return true }
        return false
    }

    /// Whether every subject `pattern` matches is among them.
    func covers(_ pattern: SubjectPattern) -> Bool {
        coversEverything || patterns.contains { $0.covers(pattern) }
    }

    /// Whether some subject `pattern` matches is among them.
    func overlaps(_ pattern: SubjectPattern) -> Bool {
        coversEverything || patterns.contains { $0.overlaps(pattern) }
    }
}
