import Runnel
import RunnelJSON
import RunnelProtocol

@testable import RunnelServer

/// A test's subject store that changes a few of a store's answers and passes the rest to the
/// store it wraps (`base`): `DiskWaitingStore`, `SharedMemoryStore`.
protocol WrappedSubjectStore: SubjectStore {
    associatedtype Base: SubjectStore
    var base: Base { get }
}

extension WrappedSubjectStore {
    var count: Int { base.count }
    subscript(name: String) -> SubjectEntry? { base[name] }
    var local: MemorySubjectStore { base.local }
    func list(prefix: String) -> [SubjectEntry] { base.list(prefix: prefix) }
    var keepsDurableSubjects: Bool { base.keepsDurableSubjects }
    func checkDurableWrites() throws(ProtocolError) { try base.checkDurableWrites() }
    func create(
        _ name: String, kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64?, initial: RawJSON?, durable: Bool
    ) -> SubjectEntry {
        base.create(
            name, kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, initial: initial,
            durable: durable)
    }
    func publish(
        _ value: RawJSON, members: JSONMemberIndex, to entry: SubjectEntry, bounding bound: PublishEvaluationBound
    ) {
        base.publish(value, members: members, to: entry, bounding: bound)
    }
    func terminate(_ entry: SubjectEntry, error: ProtocolError?) { base.terminate(entry, error: error) }
    func delete(_ entry: SubjectEntry) { base.delete(entry) }
    func patternSignal(_ pattern: SubjectPattern, admitting: (@Sendable (String) -> Bool)?) -> Signal<Message> {
        base.patternSignal(pattern, admitting: admitting)
    }
    var retained: RetainedValues { base.retained }
    var journalStatistics: JournalStatistics? { base.journalStatistics }
    func close() { base.close() }
    func repliesWait(forChangeOf entry: SubjectEntry) -> Bool { base.repliesWait(forChangeOf: entry) }
    func repliesWait(forValueOf entry: SubjectEntry) -> Bool { base.repliesWait(forValueOf: entry) }
}
