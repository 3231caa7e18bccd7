import Runnel
import RunnelProtocol

/// The live side of one pattern subscription: subscribed to every subject whose name matches,
/// forwarding their values (never their terminal events, which do not end a pattern
/// subscription) into one downstream subscriber. Loop thread only.
///
/// `admits`, when set, decides once per matching subject, as the watcher meets it, whether it
/// joins (a token's rights over part of the pattern); nothing is checked per value.
final class PatternWatcher: PatternReading, @unchecked Sendable {
    /// Its pattern, and which subjects it reads.
    let reader: PatternReader
    private let downstream: any Subscriber<Message>
    private var attached: [ObjectIdentifier: Disposable] = [:]

    init(pattern: SubjectPattern, downstream: any Subscriber<Message>, admits: (@Sendable (String) -> Bool)?) {
        reader = PatternReader(pattern: pattern, admits: admits)
        self.downstream = downstream
    }

    var pattern: SubjectPattern { reader.pattern }

    /// Subscribes to `entry`'s subject (a replay or behavior subject replays to it first),
    /// when `admits` lets it join.
    func attach(_ entry: SubjectEntry) {
        let key = ObjectIdentifier(entry)
        guard attached[key] == nil, receives(entry.name) else { return }
        attached[key] = entry.subject.subscribe(NextForwarder(downstream))
    }

    func receives(_ name: String) -> Bool { reader.receives(name) }

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

/// Which subjects a pattern subscription reads: those its pattern matches, the server's own
/// only for a pattern of theirs (`SystemSubjects`), and only those `admits` (a token's rights
/// over part of the pattern). A value: another loop's owner counts a subscription by it
/// (`RemotePatternReach`).
struct PatternReader: Sendable {
    let pattern: SubjectPattern
    let admits: (@Sendable (String) -> Bool)?

    /// Whether values of the subject `name`, which matches the pattern, reach it.
    func receives(_ name: String) -> Bool {
        SystemSubjects.mayReach(pattern: pattern.text, name: name) && admits?(name) ?? true
    }
}

/// A pattern subscription, or another loop's stand-in for one (`RemotePatternReach`), as an
/// index of them counts it.
protocol PatternReading: AnyObject {
    var reader: PatternReader { get }
}

extension PatternIndex where Member: PatternReading {
    /// How many subscriptions a value published to `name` now would reach: `named`, those
    /// naming it, and the pattern subscriptions indexed that match it and may read it.
    func reach(of name: String, named: Int) -> Int {
        matches(name).reduce(named) { $1.reader.receives(name) ? $0 + 1 : $0 }
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
