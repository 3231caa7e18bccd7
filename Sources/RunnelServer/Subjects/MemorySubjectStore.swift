import Runnel
import RunnelJSON
import RunnelProtocol

/// The subject store that keeps everything in memory: the named subjects by name, and the
/// live pattern subscriptions indexed by their tokens so that a new subject joins the ones
/// that match it. Loop thread only (it is `Sendable` only so loop-confined closures may
/// capture it).
package final class MemorySubjectStore: SubjectStore, @unchecked Sendable {
    private var entries: [String: SubjectEntry] = [:]
    private let patterns = PatternIndex<PatternWatcher>()
    /// Told of each subject taken in (made, restored, another node's) once this store's pattern
    /// subscriptions have met it: the owner's `ReplicaSource` sends it on to the loops whose
    /// pattern subscriptions it matches (`ReplicaSource.subjectMade`).
    var adopted: ((SubjectEntry) -> Void)?
    package let retained: RetainedValues

    package init(retained: RetainedValues = RetainedValues()) { self.retained = retained }

    package var count: Int { entries.count }

    package subscript(name: String) -> SubjectEntry? { entries[name] }

    package func list(prefix: String) -> [SubjectEntry] {
        entries.values.filter { $0.name.utf8.starts(with: prefix.utf8) }.sorted { $0.name < $1.name }
    }

    package var local: MemorySubjectStore { self }

    /// How many subscriptions a value published to `name` now would reach: those naming it
    /// and the pattern subscriptions that match it and may read it, here and, as they told,
    /// on the loops holding replicas of it (decision 0011).
    func subscribers(of name: String) -> Int {
        let named = entries[name].map { $0.namedSubscriptions + $0.replicaSubscribers.named } ?? 0
        return patterns.reach(of: name, named: named)
    }

    package let keepsDurableSubjects = false
    package let repliesWaitForDisk = false
    package let journalStatistics: JournalStatistics? = nil
    package func checkDurableWrites() throws(ProtocolError) {}
    package func whenWritten(_ action: @escaping (ProtocolError?) -> Void) { action(nil) }
    package func close() {}
    package func checkShared() throws(ProtocolError) {}
    package func repliesWait(forChangeOf entry: SubjectEntry) -> Bool { false }
    package func repliesWait(forValueOf entry: SubjectEntry) -> Bool { false }

    package func create(
        _ name: String, kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64?, initial: RawJSON?, durable: Bool
    ) -> SubjectEntry {
        precondition(!durable, "a memory store keeps no durable subject")
        let entry = SubjectEntry(
            name: name, kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, initial: initial,
            created: retained.now, maxReplayBytes: retained.maxReplayBytes)
        adopt(entry)
        return entry
    }

    package func createMap(_ name: String, ttlMilliseconds: Int64?, maxKeys: Int, durable: Bool) -> SubjectEntry {
        precondition(!durable, "a memory store keeps no durable subject")
        let entry = SubjectEntry(
            name: name, kind: .map, capacity: nil, retainMilliseconds: ttlMilliseconds, initial: nil,
            maxReplayBytes: retained.maxReplayBytes, maxKeys: maxKeys)
        adopt(entry)
        return entry
    }

    package func publish(
        _ value: RawJSON, members: JSONMemberIndex, key: String, to entry: SubjectEntry,
        bounding bound: PublishEvaluationBound
    ) {
        entry.published &+= 1
        bound.beginPublish()
        entry.write(value, members: members, key: key, seq: entry.nextSeq(), time: retained.now)
        bound.endPublish()
    }

    package func remove(_ key: String, from entry: SubjectEntry, bounding bound: PublishEvaluationBound) -> Bool {
        bound.beginPublish()
        defer { bound.endPublish() }
        return entry.remove(key, .deleted, seq: entry.nextSeq, time: retained.now)
    }

    /// Takes in `entry`, made elsewhere (a durable subject, new or restored), under its name.
    func adopt(_ entry: SubjectEntry) {
        assert(entries[entry.name] == nil, "subject '\(entry.name)' exists")
        entries[entry.name] = entry
        entry.countRetained(in: retained)
        for watcher in patterns.matches(entry.name) { watcher.attach(entry) }
        adopted?(entry)
    }

    @inline(__always)
    package func publish(
        _ value: RawJSON, members: JSONMemberIndex, to entry: SubjectEntry, bounding bound: PublishEvaluationBound
    ) {
        entry.published &+= 1
        bound.beginPublish()
        entry.deliver(
            Message(
                label: entry.label, raw: value, members: members, seq: entry.nextSeq(), time: retained.now))
        bound.endPublish()
    }

    package func terminate(_ entry: SubjectEntry, error: ProtocolError?) {
        entry.isEnding = true
        if let error {
            entry.subject.sendError(error)
        } else {
            entry.subject.sendCompleted()
        }
    }

    package func delete(_ entry: SubjectEntry) {
        forget(entry)
        entry.subject.sendCompleted()
    }

    /// Frees `entry`'s name and takes it out of pattern subscriptions; its subscribers still
    /// wait for the completion that `delete` sends.
    func forget(_ entry: SubjectEntry) {
        entries[entry.name] = nil
        entry.stopCountingRetained()
        entry.isDeleted = true
        entry.isEnding = true
        for watcher in patterns.matches(entry.name) { watcher.detach(entry) }
    }

    package func patternSignal(_ pattern: SubjectPattern, admitting: (@Sendable (String) -> Bool)?) -> Signal<Message> {
        Signal.create { [self] subscriber in
            let watcher = PatternWatcher(pattern: pattern, downstream: subscriber, admits: admitting)
            patterns.insert(watcher, for: pattern)
            for entry in entries.values where pattern.matches(entry.name) { watcher.attach(entry) }
            return Disposable { [self] in
                patterns.remove(watcher, for: pattern)
                watcher.disposeAll()
            }
        }
    }
}
