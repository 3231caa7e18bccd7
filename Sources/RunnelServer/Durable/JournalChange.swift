import RunnelBytes
import RunnelJSON
import RunnelUV

/// One change to a durable subject, as the store made it; the journal applies them in order.
/// Immutable and `Sendable`: made on the loop thread, applied on the writer's.
enum JournalChange: Sendable {
    /// A new subject: its id, name, kind, capacity (a map's: its `max_keys`) and `retain_s` in
    /// milliseconds (replay; a map's: its `ttl_s`) and epoch; a behavior's initial value, seq 0,
    /// stamped `time` (Unix ms).
    case create(
        id: Int64, name: String, kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64?, epoch: String,
        initial: ByteBuffer?, time: Int64)
    /// A value published, with its seq and publish time (Unix ms).
    case publish(id: Int64, seq: UInt64, value: ByteBuffer, time: Int64)
    /// A map's key set to `value`, with the change's seq and time.
    case write(id: Int64, key: String, seq: UInt64, value: ByteBuffer, time: Int64)
    /// A map's key removed (deleted or expired), as the change with seq `seq`.
    case remove(id: Int64, key: String, seq: UInt64)
    /// The subject ended: completed (`errorMessage` nil) or with a `subject_error`.
    case terminate(id: Int64, errorMessage: String?)
    /// The subject and everything kept of it removed.
    case delete(id: Int64)
}

/// A durable subject as the journal keeps it, read back at start.
package struct StoredSubject: Sendable {
    let id: Int64
    package let name: String
    package let kind: SubjectKind
    /// A replay's capacity; a map's `max_keys`.
    package let capacity: Int?
    /// `retain_s`, in milliseconds (replay subjects that have one); a map's `ttl_s`.
    package let retainMilliseconds: Int64?
    var epoch: String
    /// The seq of its latest value (0 before any).
    let seq: UInt64
    /// The retained values, oldest first, with their seqs and publish times (Unix ms; 0 for
    /// values stored before version 1.3 kept times).
    let values: [(seq: UInt64, value: RawJSON, time: Int64)]
    /// A map's live keys, each with the seq, value and time of its latest write.
    var keys: [(key: String, seq: UInt64, value: RawJSON, time: Int64)] = []
    /// nil while live; `.some(nil)` completed; `.some(message)` ended with a `subject_error`.
    let terminal: String??
}

/// What a data directory held at start, read without writing (`JournalDatabase.read`): the
/// stored subjects, and whether the last runneld to have the database open stopped cleanly.
package struct StoredJournal: Sendable {
    let directory: String
    /// Whether the database file exists (else it is created when opened for writing).
    let exists: Bool
    /// The schema version it was written in (`JournalDatabase.schemaVersion`, or an earlier
    /// one that opening it for writing upgrades).
    let schema: String
    package var subjects: [StoredSubject]
    let wasClean: Bool
}
