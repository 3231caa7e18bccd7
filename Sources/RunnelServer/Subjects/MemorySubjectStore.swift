import Runnel

/// The subject store that keeps everything in memory: the named subjects by name, and the
/// live pattern subscriptions indexed by their tokens so that a new subject joins the ones
/// that match it. Loop thread only (it is `Sendable` only so loop-confined closures may
/// capture it).
final class MemorySubjectStore: SubjectStore, @unchecked Sendable {
    private var entries: [String: SubjectEntry] = [:]
    private let patterns = PatternIndex<PatternWatcher>()

    var count: Int { entries.count }

    subscript(name: String) -> SubjectEntry? { entries[name] }

    func list(prefix: String) -> [SubjectEntry] {
        entries.values.filter { $0.name.utf8.starts(with: prefix.utf8) }.sorted { $0.name < $1.name }
    }

    func create(_ name: String, kind: SubjectKind, capacity: Int?, initial: RawJSON?) -> SubjectEntry {
        assert(entries[name] == nil, "subject '\(name)' exists")
        let entry = SubjectEntry(name: name, kind: kind, capacity: capacity, initial: initial)
        entries[name] = entry
        for watcher in patterns.matches(name) { watcher.attach(entry) }
        return entry
    }

    @inline(__always)
    func publish(_ value: RawJSON, to entry: SubjectEntry) {
        entry.published &+= 1
        entry.subject.sendNext(Message(label: entry.label, raw: value))
    }

    func terminate(_ entry: SubjectEntry, error: ProtocolError?) {
        if let error {
            entry.subject.sendError(error)
        } else {
            entry.subject.sendCompleted()
        }
    }

    func delete(_ entry: SubjectEntry) {
        entries[entry.name] = nil
        entry.isDeleted = true
        for watcher in patterns.matches(entry.name) { watcher.detach(entry) }
        entry.subject.sendCompleted()
    }

    func patternSignal(_ pattern: SubjectPattern) -> Signal<Message> {
        Signal.create { [self] subscriber in
            let watcher = PatternWatcher(pattern: pattern, downstream: subscriber)
            patterns.insert(watcher, for: pattern)
            for entry in entries.values where pattern.matches(entry.name) { watcher.attach(entry) }
            return Disposable { [self] in
                patterns.remove(watcher, for: pattern)
                watcher.disposeAll()
            }
        }
    }
}
