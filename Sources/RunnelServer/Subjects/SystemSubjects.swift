import RunnelProtocol

/// The names the server keeps for itself (version 1.3): those beginning with `$`. Clients
/// never write to them (`pub`, `create`, `complete`, `error` and `delete` are `unauthorized`);
/// the one family they read is `$sys.occupancy.S` (`OccupancyTracker`), by name or by a
/// pattern beginning with `$sys.occupancy.`; any other is `unknown_subject`. Patterns that do
/// not begin with `$` never match them, so a `>` subscriber sees no server subject.
///
/// Thread rules: pure functions.
enum SystemSubjects {
    static let occupancyPrefix = "$sys.occupancy."

    /// Whether `name` (or a pattern's text) is the server's.
    static func isReserved(_ name: String) -> Bool { name.utf8.first == UInt8(ascii: "$") }

    /// Whether a subscription to `pattern` may read the subject `name` it matches: the
    /// server's subjects only for a pattern of theirs.
    static func mayReach(pattern: String, name: String) -> Bool { isReserved(name) == isReserved(pattern) }

    /// Whether a subscription to `pattern` reads the subject `name`: it matches, and may.
    static func reaches(_ pattern: SubjectPattern, _ name: String) -> Bool {
        pattern.matches(name) && mayReach(pattern: pattern.text, name: name)
    }

    /// `unauthorized` for a write to a reserved name.
    static func checkWritable(_ name: String) throws(ProtocolError) {
        guard !isReserved(name) else {
            throw ProtocolError(.unauthorized, "\(name): names beginning with '$' are the server's, read only")
        }
    }

    /// `unknown_subject` for a pattern of the server's names other than occupancy's.
    static func checkReadable(pattern: String) throws(ProtocolError) {
        guard !isReserved(pattern) || occupied(by: pattern) != nil else {
            throw ProtocolError(
                .unknownSubject, "no subjects match '\(pattern)': names beginning with '$' are the server's")
        }
    }

    /// S for `$sys.occupancy.S` where S is a client's subject name (a pattern too, when
    /// `name` is one); nil for any other name.
    static func occupied(by name: String) -> String? {
        guard name.hasPrefix(occupancyPrefix) else { return nil }
        let subject = String(name.utf8.dropFirst(occupancyPrefix.utf8.count))!
        guard !isReserved(subject), SubjectName.isValidPattern(subject) else { return nil }
        return subject
    }

    /// The name whose rights apply to reading `name`: S for `$sys.occupancy.S` (a token reads
    /// a subject's occupancy when it may subscribe to the subject), else `name`.
    static func rightsName(of name: String) -> String { occupied(by: name) ?? name }
}
