import RunnelProtocol

/// The pattern subscriptions of a loop that does not own the subjects (decision 0011): which
/// patterns the owner is asked to send the subjects of (`ReplicaRequest.watch`), who waits for
/// its answer, how many subscriptions each has here, and their watchers, indexed, to which each
/// replica a pattern matches is attached as it comes. `SubjectReplicas` does the asking.
///
/// Thread rules: its loop's thread. Lifetime rule: its `SubjectReplicas` holds it; it holds
/// each watcher from `began` to `ended`.
final class ReplicaPatterns {
    /// A pattern watched: its subscriptions here, and who waits for the owner's answer (nil
    /// once it came).
    private struct Watch {
        let pattern: SubjectPattern
        var subscriptions = 0
        var waiting: [() -> Void]? = []
    }

    private var watched: [String: Watch] = [:]
    private let watchers = PatternIndex<PatternWatcher>()

    /// Whether the owner has sent every subject `pattern` matches, and sends each it makes.
    func isWatching(_ pattern: SubjectPattern) -> Bool {
        guard let watch = watched[pattern.text] else { return false }
        return watch.waiting == nil
    }

    /// Keeps `then` for when the owner has answered the watch of `pattern`; returns true when
    /// the owner is to be asked (nobody waited for it yet).
    func awaitWatch(of pattern: SubjectPattern, then: @escaping () -> Void) -> Bool {
        guard watched[pattern.text] == nil else {
            watched[pattern.text]!.waiting?.append(then)
            return false
        }
        watched[pattern.text] = Watch(pattern: pattern, waiting: [then])
        return true
    }

    /// The owner answered the watch of `pattern`: who waited goes on. Returns true when no
    /// subscription took the pattern meanwhile (it is to be let go).
    func watchAnswered(_ pattern: SubjectPattern) -> Bool {
        guard let waiting = watched[pattern.text]?.waiting else { return false }
        watched[pattern.text]!.waiting = nil
        for then in waiting { then() }
        return watched[pattern.text]?.subscriptions == 0
    }

    /// A subscription's `watcher` began, attached to each of `replicas` its pattern matches.
    func began(_ watcher: PatternWatcher, reading replicas: some Sequence<SubjectEntry>) {
        watched[watcher.pattern.text]?.subscriptions += 1
        watchers.insert(watcher, for: watcher.pattern)
        for entry in replicas where watcher.pattern.matches(entry.name) { watcher.attach(entry) }
    }

    /// A subscription's `watcher` ended; returns true when it was its pattern's last (the
    /// pattern is to be let go).
    func ended(_ watcher: PatternWatcher) -> Bool {
        watchers.remove(watcher, for: watcher.pattern)
        watcher.disposeAll()
        watched[watcher.pattern.text]?.subscriptions -= 1
        return watched[watcher.pattern.text]?.subscriptions == 0
    }

    /// Something other than a subscription of its own holds the watched `pattern` (a stage
    /// chain that looks subjects up at run time, `ReplicaHold`), until `release`.
    func hold(_ pattern: SubjectPattern) { watched[pattern.text]?.subscriptions += 1 }

    /// A `hold` ended; returns true when nothing holds the pattern any more (it is to be let go).
    func release(_ pattern: SubjectPattern) -> Bool {
        watched[pattern.text]?.subscriptions -= 1
        return watched[pattern.text]?.subscriptions == 0
    }

    /// The pattern is let go.
    func forget(_ pattern: SubjectPattern) { watched[pattern.text] = nil }

    /// A replica came: the subscriptions whose pattern matches it read it.
    func attach(_ entry: SubjectEntry) {
        for watcher in watchers.matches(entry.name) { watcher.attach(entry) }
    }

    /// A replica's subject was deleted.
    func detach(_ entry: SubjectEntry) {
        for watcher in watchers.matches(entry.name) { watcher.detach(entry) }
    }

    /// Whether a pattern watched matches `name`: its replica is held while the pattern is.
    func holds(_ name: String) -> Bool { watched.values.contains { $0.pattern.matches(name) } }
}
