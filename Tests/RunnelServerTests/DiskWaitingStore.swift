import Runnel
import RunnelJSON
import RunnelProtocol

@testable import RunnelServer

/// A subject store whose replies wait for a disk the test drives: a durable store underneath
/// (`fsync = everysec`, so it keeps and delivers at once), but `repliesWaitForDisk` is true
/// and `whenWritten`'s actions wait until `commit(failing:)`, as `fsync = always`'s wait for
/// the writer thread's report. For the session's corked replies without running the loop.
///
/// Thread rules: the test's thread, as the harness's loop. Lifetime rule: holds its durable
/// store and the waiting actions until they run.
final class DiskWaitingStore: SubjectStore {
    private let store: DurableSubjectStore
    private var waiting: [(ProtocolError?) -> Void] = []

    init(_ store: DurableSubjectStore) { self.store = store }

    /// Runs every waiting action, in order, as the disk reports: with `error` when it failed.
    func commit(failing error: ProtocolError? = nil) {
        let actions = waiting
        waiting = []
        for action in actions { action(error) }
    }

    var repliesWaitForDisk: Bool { true }
    func whenWritten(_ action: @escaping (ProtocolError?) -> Void) { waiting.append(action) }

    var count: Int { store.count }
    subscript(name: String) -> SubjectEntry? { store[name] }
    var local: MemorySubjectStore { store.local }
    func list(prefix: String) -> [SubjectEntry] { store.list(prefix: prefix) }
    var keepsDurableSubjects: Bool { store.keepsDurableSubjects }
    func checkDurableWrites() throws(ProtocolError) { try store.checkDurableWrites() }
    func create(
        _ name: String, kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64?, initial: RawJSON?, durable: Bool
    ) -> SubjectEntry {
        store.create(
            name, kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, initial: initial,
            durable: durable)
    }
    func publish(
        _ value: RawJSON, members: JSONMemberIndex, to entry: SubjectEntry, bounding bound: PublishEvaluationBound
    ) {
        store.publish(value, members: members, to: entry, bounding: bound)
    }
    func terminate(_ entry: SubjectEntry, error: ProtocolError?) { store.terminate(entry, error: error) }
    func delete(_ entry: SubjectEntry) { store.delete(entry) }
    func patternSignal(_ pattern: SubjectPattern, admitting: (@Sendable (String) -> Bool)?) -> Signal<Message> {
        store.patternSignal(pattern, admitting: admitting)
    }
    var retained: RetainedValues { store.retained }
    var journalStatistics: JournalStatistics? { store.journalStatistics }
    func close() { store.close() }
    func checkShared() throws(ProtocolError) {}
    func repliesWait(forChangeOf entry: SubjectEntry) -> Bool { store.repliesWait(forChangeOf: entry) }
    func repliesWait(forValueOf entry: SubjectEntry) -> Bool { store.repliesWait(forValueOf: entry) }
}
