import Runnel

/// The subscriptions one session holds, by sid, and what they hold together: the bytes of
/// their sids and stage lists (against `max_subscription_bytes`), the next sid to give out,
/// and the counts they keep elsewhere (their subject's `namedSubscriptions` and `conflatingSubscriptions`, the server's
/// `subscriptions`, a cluster's interest), which `insert` and `forget` keep in step.
///
/// Thread rules: loop thread only, like its session. Lifetime rule: its session owns it; it
/// holds each subscription from `insert` until `forget` (or `disposeAll`), which disposes its
/// chain. A class, not a value: disposing a chain may end other subscriptions of the same
/// session while `forget` runs.
final class SubscriptionTable {
    private var bySid: [String: SessionSubscription] = [:]
    /// Bytes of sids and stage lists the subscriptions hold (`SessionSubscription.pinnedBytes`).
    private(set) var pinnedBytes = 0
    private var nextSid: UInt64 = 1
    private let stats: ServerStats
    /// A clustered node's record of what its clients subscribe to; nil standalone.
    private let interest: (any SubscriptionInterest)?
    /// The counts `$sys.occupancy.S` reports, told of each subscription that goes (and by
    /// `Session.subscribe` of each whose chain runs).
    private let occupancy: OccupancyTracker
    /// A loop's replicas of subjects another loop owns, told of each subscription to one that
    /// comes or goes; nil on the owner.
    private let replicas: SubjectReplicas?

    init(
        stats: ServerStats, interest: (any SubscriptionInterest)?, occupancy: OccupancyTracker,
        replicas: SubjectReplicas?
    ) {
        self.stats = stats
        self.interest = interest
        self.occupancy = occupancy
        self.replicas = replicas
    }

    var count: Int { bySid.count }

    subscript(sid: String) -> SessionSubscription? { bySid[sid] }

    /// Every subscription, as a copy: ending one may change the table.
    var all: [SessionSubscription] { Array(bySid.values) }

    /// A sid not in use on this connection.
    func freshSid() -> String {
        while true {
            let sid = "s\(nextSid)"
            nextSid += 1
            if bySid[sid] == nil { return sid }
        }
    }

    /// Takes `subscription` in, under its sid, which must be free. Returns true when a cluster
    /// made a NATS subscription for it or for a subject its stages read (`ClusterInterest`).
    @discardableResult
    func insert(_ subscription: SessionSubscription) -> Bool {
        precondition(bySid[subscription.sid] == nil, "a sid in use")
        bySid[subscription.sid] = subscription
        pinnedBytes += subscription.pinnedBytes
        if let entry = subscription.entry {
            entry.namedSubscriptions += 1
            if subscription.conflates { entry.conflatingSubscriptions += 1 }
            replicas?.subscribersChanged(entry)
        }
        stats.counts.subscriptions += 1
        guard let interest else { return false }
        var made = interest.began(subscription)
        for name in subscription.reached {
            made =
                interest.beganReading(name, plain: subscription.reachedPlain.contains(name), by: subscription) || made
        }
        return made
    }

    /// `subscription`'s stages reached `name` for the first time. Once the subscription is in
    /// the table (a run-time lookup, as `flattenMap`'s), a cluster follows the subject for it
    /// from now on; before, `insert` does.
    func noteReached(_ name: String, by subscription: SessionSubscription) {
        guard let interest, bySid[subscription.sid] === subscription, !subscription.isFinished else { return }
        interest.beganReading(name, plain: subscription.reachedPlain.contains(name), by: subscription)
    }

    /// Forgets `subscription` (finished, unsubscribed or closed), disposes its chain and fixes
    /// the counts; once.
    func forget(_ subscription: SessionSubscription) {
        guard !subscription.isFinished else { return }
        subscription.isFinished = true
        subscription.disposable?.dispose()
        if bySid[subscription.sid] === subscription { bySid[subscription.sid] = nil }
        if let entry = subscription.entry {
            entry.namedSubscriptions -= 1
            if subscription.conflates { entry.conflatingSubscriptions -= 1 }
            replicas?.subscribersChanged(entry)
        }
        if let interest {
            interest.ended(subscription)
            for name in subscription.reached { interest.endedReading(name, by: subscription) }
        }
        pinnedBytes -= subscription.pinnedBytes
        stats.counts.subscriptions -= 1
        occupancy.ended(subscription)
        assert(pinnedBytes >= 0 && (!bySid.isEmpty || pinnedBytes == 0), "pinned bytes out of step")
    }

    /// Disposes every subscription: the connection is gone or going.
    func disposeAll() {
        for subscription in all { forget(subscription) }
        bySid.removeAll()
        assert(pinnedBytes == 0, "pinned bytes out of step")
    }
}
