import RunnelProtocol

/// What a node asks of the cluster its subjects are shared with (docs/architecture.md, "A
/// cluster"), and all that the node's code (server, sessions, routes) knows of it: a clustered
/// node's subject store is one (`SubjectStore.sharing`); a standalone node has none. What the
/// cluster tells the node comes back through the store itself (values, definitions, the link's
/// state as `unavailable`).
///
/// Thread rules: the first loop's thread.
package protocol SharedSubjects: AnyObject {
    /// Where subscriptions say which subjects they read, for the cluster to bring those
    /// subjects' values from other nodes.
    var readers: any SubscriptionInterest { get }
    /// Makes the sessions' change now being asked wait (`ClusterChanges`) until every other
    /// node knows the subscriptions this node made since the last time: a `sub` reply after it
    /// reaches a value published anywhere.
    func awaitNewInterest()
    /// Runs `action` once the node has caught up with the cluster (its streams' values read,
    /// every live node heard), at once if it has: the listeners open then.
    func whenCaughtUp(_ action: @escaping () -> Void)
    /// Runs `then` once this node has delivered `entry`'s values as far as `position`, which
    /// another node gave (this node's copy of the stream lags), or after `within` at the latest;
    /// false, and nothing done, when this node is not behind it.
    func whenDelivered(
        upTo position: Position, of entry: SubjectEntry, within: Duration, then: @escaping () -> Void
    ) -> Bool
    /// Whether the link to the cluster is up (`/healthz` answers 503 while it is not).
    var isLinked: Bool { get }
    /// Told when the link goes down (false) or comes back (true).
    var linkChanged: (Bool) -> Void { get set }
    /// The cluster's figures for `stats` and `/metrics`, read now.
    var sharedFigures: any SharedFigures { get }
    /// The other nodes' occupancy counts.
    var occupancyPeers: any OccupancyPeers { get }
    /// Told the name of each subject the cluster made here (a definition or another node's
    /// value arriving).
    var adopted: (String) -> Void { get set }
    /// `max_subjects`, `max_depth` and the publish bound, which values from other nodes respect
    /// too (at start and at every reload).
    func apply(maxSubjects: Int, maxDepth: Int, publishBound: PublishEvaluationBound)
}

/// What is refused while a node's link to its cluster is down (`SubjectStore.checkShared`).
package enum SharedLink {
    package static let down = ProtocolError(
        .unavailable, "this node's link to the cluster (NATS) is down; try again or another node")
}

/// Where a node's subscriptions say what they read (`SubscriptionTable`), for the cluster to
/// hold the NATS subscriptions that bring those values (`ClusterInterest`).
///
/// Thread rules: the first loop's thread.
package protocol SubscriptionInterest: AnyObject {
    /// `subscription` began; true when that made a new NATS subscription (the `sub` reply then
    /// waits for the other nodes to know: `SharedSubjects.awaitNewInterest`).
    @discardableResult func began(_ subscription: any InterestedSubscription) -> Bool
    /// `subscription` ended.
    func ended(_ subscription: any InterestedSubscription)
    /// `subscription`'s stages read `name` too (`plain`: a plain subject, whose values come
    /// from other nodes); true when that made a new NATS subscription.
    @discardableResult func beganReading(_ name: String, plain: Bool, by subscription: any InterestedSubscription)
        -> Bool
    /// `subscription`'s stages no longer read `name`.
    func endedReading(_ name: String, by subscription: any InterestedSubscription)
}

/// A subscription as the cluster sees it (`SubscriptionInterest`): a session's
/// (`SessionSubscription`), or one of another loop's that the subjects' owner stands for
/// (decision 0011).
///
/// Thread rules: the first loop's thread.
package protocol InterestedSubscription: AnyObject {
    /// The subject or pattern it names.
    var pattern: SubjectPattern { get }
    /// Whether other nodes' values of what it names cross over core NATS: a pattern's, or a
    /// plain subject's (a retained subject's come from its stream).
    var readsPlainValues: Bool { get }
    /// Counts `count` more values missed (nil: how many is not known): it says so before its
    /// next value.
    func noteDropped(_ count: UInt64?)
}

/// A cluster's figures as `stats` (its `cluster` member) and `/metrics` show them.
/// Thread rules: a value.
package protocol SharedFigures: Sendable {
    func write(into line: inout ServerLineWriter)
    func writeMetrics(into metrics: inout PrometheusExposition)
}
