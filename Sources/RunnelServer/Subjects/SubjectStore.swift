import Runnel

/// The server's named subjects, and the one owner of every change to them: every creation,
/// publish, termination and deletion passes through a store, whether it comes from a request,
/// from the configuration's `[[subjects]]` or from a stage that names a subject. So a store
/// sees every change in order, which is what a store that keeps subjects on disk needs; the
/// rules about when a change is allowed (auto-creation, limits, kinds) are the callers'.
///
/// `MemorySubjectStore` keeps them in memory. Thread rules: loop thread only.
protocol SubjectStore: AnyObject {
    /// How many subjects there are.
    var count: Int { get }

    /// The subject `name`, if there is one.
    subscript(name: String) -> SubjectEntry? { get }

    /// Subjects whose name starts with `prefix`, sorted by name.
    func list(prefix: String) -> [SubjectEntry]

    /// Creates the subject `name`, which does not exist; live pattern subscriptions that match
    /// join it at once.
    func create(_ name: String, kind: SubjectKind, capacity: Int?, initial: RawJSON?) -> SubjectEntry

    /// Publishes `value` to `entry`, which is not terminated.
    func publish(_ value: RawJSON, to entry: SubjectEntry)

    /// Terminates `entry`: with `error`, or completed when it is nil.
    func terminate(_ entry: SubjectEntry, error: ProtocolError?)

    /// Completes `entry`'s subscriptions and frees its name.
    func delete(_ entry: SubjectEntry)

    /// Every value published to subjects matching `pattern`, present and future. It never
    /// completes on its own; disposing it leaves every matching subject.
    func patternSignal(_ pattern: SubjectPattern) -> Signal<Message>
}
