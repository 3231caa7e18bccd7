import RunnelBytes
import RunnelJSON
import RunnelUV

/// One change to a durable subject, as the store made it; the journal applies them in order.
/// Immutable and `Sendable`: made on the loop thread, applied on the writer's.
enum JournalChange: Sendable {
    /// A new subject: its id, name, kind, capacity (replay) and epoch; a behavior's initial
    /// value, seq 0.
    case create(id: Int64, name: String, kind: SubjectKind, capacity: Int?, epoch: String, initial: ByteBuffer?)
    /// A value published, with its seq.
    case publish(id: Int64, seq: UInt64, value: ByteBuffer)
    /// The subject ended: completed (`errorMessage` nil) or with a `subject_error`.
    case terminate(id: Int64, errorMessage: String?)
    /// The subject and everything kept of it removed.
    case delete(id: Int64)
}

/// A durable subject as the journal keeps it, read back at start.
struct StoredSubject: Sendable {
    let id: Int64
    let name: String
    let kind: SubjectKind
    let capacity: Int?
    var epoch: String
    /// The seq of its latest value (0 before any).
    let seq: UInt64
    /// The retained values, oldest first, with their seqs.
    let values: [(seq: UInt64, value: RawJSON)]
    /// nil while live; `.some(nil)` completed; `.some(message)` ended with a `subject_error`.
    let terminal: String??
}

/// What a data directory held at start, read without writing (`JournalDatabase.read`): the
/// stored subjects, and whether the last runneld to have the database open stopped cleanly.
struct StoredJournal: Sendable {
    let directory: String
    /// Whether the database file exists (else it is created when opened for writing).
    let exists: Bool
    var subjects: [StoredSubject]
    let wasClean: Bool
}
