/// One difference between the running configuration and a reloaded one (SIGHUP).
///
/// The server applies the `.live` changes, and logs every change with its `applicability` so
/// an operator sees what a reload did and did not do. Immutable value.
public struct ConfigChange: Sendable, Equatable, CustomStringConvertible {
    /// Whether the running server takes the new value.
    public enum Applicability: String, Sendable, Equatable {
        /// Applied at once (limits, auth tokens, log level, policies, new subjects).
        case live
        /// Takes effect only after a restart (`listen`).
        case needsRestart = "needs restart"
        /// Not applied: a removed or redefined subject keeps living as it is until deleted.
        case ignored
    }

    /// The top-level key, or `subjects.NAME` for one configured subject.
    public let key: String
    /// The old and new values as rendered by `ServerConfig.renderedValue(of:)`; `(none)` for a
    /// subject that is added or removed.
    public let oldValue: String
    public let newValue: String
    public let applicability: Applicability

    public init(key: String, oldValue: String, newValue: String, applicability: Applicability) {
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.applicability = applicability
    }

    /// `key: old -> new (live)`, the reload log line.
    public var description: String { "\(key): \(oldValue) -> \(newValue) (\(applicability.rawValue))" }
}
