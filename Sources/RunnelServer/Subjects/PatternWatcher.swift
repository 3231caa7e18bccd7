import Runnel
import RunnelProtocol

/// The live side of one pattern subscription: subscribed to every subject whose name matches,
/// forwarding their values (never their terminal events, which do not end a pattern
/// subscription) into one downstream subscriber. Loop thread only.
///
/// `admits`, when set, decides once per matching subject, as the watcher meets it, whether it
/// joins (a token's rights over part of the pattern); nothing is checked per value.
final class PatternWatcher: @unchecked Sendable {
    let pattern: SubjectPattern
    private let downstream: any Subscriber<Message>
    private let admits: (@Sendable (String) -> Bool)?
    private var attached: [ObjectIdentifier: Disposable] = [:]

    init(pattern: SubjectPattern, downstream: any Subscriber<Message>, admits: (@Sendable (String) -> Bool)?) {
        self.pattern = pattern
        self.downstream = downstream
        self.admits = admits
    }

    /// Subscribes to `entry`'s subject (a replay or behavior subject replays to it first),
    /// when `admits` lets it join.
    func attach(_ entry: SubjectEntry) {
        let key = ObjectIdentifier(entry)
        guard attached[key] == nil, receives(entry.name) else { return }
        attached[key] = entry.subject.subscribe(NextForwarder(downstream))
    }

    /// Whether values of the subject `name`, which matches the pattern, reach it: the server's
    /// own subjects only for a pattern of theirs (`SystemSubjects`), and only those `admits`.
    func receives(_ name: String) -> Bool {
        SystemSubjects.mayReach(pattern: pattern.text, name: name) && admits?(name) ?? true
    }

    /// Drops the subscription to `entry`, which is being deleted.
    func detach(_ entry: SubjectEntry) {
        attached.removeValue(forKey: ObjectIdentifier(entry))?.dispose()
    }

    func disposeAll() {
        let subscriptions = attached.values
        attached.removeAll()
        for subscription in subscriptions { subscription.dispose() }
    }
}

extension PatternIndex where Member == PatternWatcher {
    /// How many subscriptions a value published to `name` now would reach: `named`, those
    /// naming it, and the pattern subscriptions here that match it and may read it.
    func reach(of name: String, named: Int) -> Int {
        matches(name).reduce(named) { $1.receives(name) ? $0 + 1 : $0 }
    }
}

/// Forwards values only; terminal events of one matching subject are not the pattern's.
private final class NextForwarder: Subscriber, @unchecked Sendable {
    let downstream: any Subscriber<Message>
    init(_ downstream: any Subscriber<Message>) { self.downstream = downstream }
    func sendNext(_ value: Message) { downstream.sendNext(value) }
    func sendError(_ error: any Error) {}
    func sendCompleted() {}
    func didSubscribe(with disposable: CompoundDisposable) {}
}
