import Runnel

/// One named subject: the library subject that carries its values, and the server's
/// bookkeeping about it. Loop thread only.
final class SubjectEntry {
    let label: SubjectLabel
    let kind: SubjectKind
    /// Replay subjects only.
    let capacity: Int?
    let subject: Subject<Message>
    /// Values accepted by `pub`.
    var published: UInt64 = 0
    /// Set when the store lets go of the subject (`delete`): whoever still holds the entry
    /// must look its name up again.
    var isDeleted = false
    /// Subscriptions that name this subject (pattern subscriptions are not counted).
    var namedSubscriptions = 0

    var name: String { label.name }

    init(name: String, kind: SubjectKind, capacity: Int?, initial: RawJSON?) {
        self.label = SubjectLabel(name)
        self.kind = kind
        self.capacity = kind == .replay ? capacity : nil
        switch kind {
        case .subject:
            subject = Subject()
        case .replay:
            subject = ReplaySubject(capacity: capacity ?? 0)
        case .behavior:
            subject = BehaviorSubject(Message(label: label, raw: initial ?? .null))
        }
    }

    var isTerminated: Bool { subject.isTerminated }
}
