/// When durable subjects' changes reach the disk (config `fsync`; docs/operations.md has
/// what each mode loses, against Redis and NATS).
public enum FsyncMode: String, Sendable, CaseIterable {
    /// Each batch of changes is synced before its values reach anyone or its replies go out.
    case always
    /// Values go out at once; the journal is synced about once a second.
    case everysec
    /// Values go out at once; the operating system writes the journal when it likes.
    case no

    /// The SQLite setting for the journal's ordinary commits.
    var pragma: String {
        switch self {
        case .always: return "PRAGMA synchronous = FULL"
        case .everysec: return "PRAGMA synchronous = NORMAL"
        case .no: return "PRAGMA synchronous = OFF"
        }
    }

    /// Whether a stop that was not clean may have lost what subscribers saw, so that durable
    /// subjects must take a new epoch.
    var losesOnCrash: Bool { self != .always }
}
