import Runnel

/// The server's named subjects and live pattern subscriptions. Loop thread only (it is
/// `Sendable` only so loop-confined closures may capture it).
final class SubjectRegistry: @unchecked Sendable {
    private(set) var entries: [String: SubjectEntry] = [:]
    private let patterns = PatternIndex<PatternWatcher>()

    var count: Int { entries.count }

    subscript(name: String) -> SubjectEntry? { entries[name] }

    /// Creates a subject; live pattern subscriptions that match join it at once.
    func create(name: String, kind: SubjectKind, capacity: Int?, initial: RawJSON?) -> SubjectEntry {
        let entry = SubjectEntry(name: name, kind: kind, capacity: capacity, initial: initial)
        entries[name] = entry
        for watcher in patterns.matches(name) { watcher.attach(entry) }
        return entry
    }

    /// Completes a subject's subscriptions and frees its name.
    func delete(_ entry: SubjectEntry) {
        entries[entry.name] = nil
        entry.isDeleted = true
        for watcher in patterns.matches(entry.name) { watcher.detach(entry) }
        entry.subject.sendCompleted()
    }

    /// A signal of every value published to subjects matching `pattern`, present and future.
    /// It never completes on its own; disposing it leaves every matching subject.
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

    /// Subjects whose name starts with `prefix`, sorted by name.
    func list(prefix: String) -> [SubjectEntry] {
        entries.values.filter { $0.name.utf8.starts(with: prefix.utf8) }.sorted { $0.name < $1.name }
    }
}
