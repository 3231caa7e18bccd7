import Runnel
import RunnelJSON
import RunnelProtocol

@testable import RunnelServer

/// A store in memory that says it is shared with a cluster (`SharedSubjects`) the test plays:
/// the interest is the cluster's own (`ClusterInterest`), its NATS subscriptions recorded
/// instead of made; every other node knows a new one only once the test says so (`announce`),
/// and replies that wait for written changes wait for that.
///
/// Thread rules: the owner's loop, as a clustered store's. Lifetime rule: its server holds it.
final class SharedMemoryStore: WrappedSubjectStore, SharedSubjects, OccupancyPeers, @unchecked Sendable {
    let base = MemorySubjectStore()
    /// The subjects and patterns a NATS subscription is held for now.
    private(set) var natsSubscriptions: Set<String> = []
    private var interest: ClusterInterest!
    /// Replies waiting for the other nodes to know the interest made so far.
    private var waiting: [(ProtocolError?) -> Void] = []
    private var unannounced = false

    init() {
        interest = ClusterInterest(
            subscribe: { [unowned self] in natsSubscriptions.insert($0) },
            unsubscribe: { [unowned self] in natsSubscriptions.remove($0) })
    }

    /// Every other node now knows the NATS subscriptions made: the replies waiting go out.
    func announce() {
        unannounced = false
        let actions = waiting
        waiting = []
        for action in actions { action(nil) }
    }

    /// The cluster missed `count` values of `subject`, as a gap in its sequence shows.
    func noteMissed(_ count: UInt64, in subject: String) { interest.noteMissed(count, in: subject) }

    // MARK: SharedSubjects

    var sharing: (any SharedSubjects)? { self }
    var readers: any SubscriptionInterest { interest }
    func awaitNewInterest() { unannounced = true }
    func whenCaughtUp(_ action: @escaping () -> Void) { action() }
    /// Whether a position beyond a subject's last value is one another node gave, which this
    /// node has not delivered yet: `whenDelivered` then waits until the test says
    /// (`delivered()`).
    var isBehind = false
    /// The positions waited for, and who waits.
    private(set) var deliveryWaits: [(position: Position, then: () -> Void)] = []
    func whenDelivered(
        upTo position: Position, of entry: SubjectEntry, within: Duration, then: @escaping () -> Void
    ) -> Bool {
        guard isBehind, position.epoch == entry.epoch, position.seq > entry.lastSeq else { return false }
        deliveryWaits.append((position, then))
        return true
    }

    /// This node has caught up: whoever waited goes on.
    func delivered() {
        let waits = deliveryWaits
        deliveryWaits = []
        for wait in waits { wait.then() }
    }
    /// Whether the link is up: the test says (`link(up:)`).
    private(set) var isLinked = true
    var linkChanged: (Bool) -> Void = { _ in }

    /// The link goes down or comes back.
    func link(up: Bool) {
        isLinked = up
        linkChanged(up)
    }
    var sharedFigures: any SharedFigures { NoFigures() }
    var occupancyPeers: any OccupancyPeers { self }
    var adopted: (String) -> Void = { _ in }
    func apply(maxSubjects: Int, maxDepth: Int, publishBound: PublishEvaluationBound) {}

    // MARK: OccupancyPeers (no other node counts anything)

    func count(of subject: String) -> Int { 0 }
    func watch(_ subject: String) {}
    func unwatch(_ subject: String) {}
    var watchedElsewhere: Dictionary<String, Set<String>>.Keys { [String: Set<String>]().keys }
    func tell(_ subject: String, count: Int) {}
    var localCount: (String) -> Int = { _ in 0 }
    var othersChanged: (String) -> Void = { _ in }

    // MARK: SubjectStore, in memory

    var repliesWaitForDisk: Bool { true }
    func whenWritten(_ action: @escaping (ProtocolError?) -> Void) {
        guard unannounced else { return action(nil) }
        waiting.append(action)
    }
    func checkShared() throws(ProtocolError) { if !isLinked { throw SharedLink.down } }
}

/// A cluster that reports nothing in `stats` and `/metrics`.
private struct NoFigures: SharedFigures {
    func write(into line: inout ServerLineWriter) {}
    func writeMetrics(into metrics: inout PrometheusExposition) {}
}
