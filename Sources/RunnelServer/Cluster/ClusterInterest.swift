/// Which subjects and patterns a clustered node's clients subscribe to, with the one NATS
/// subscription each holds: a node subscribes in NATS only to what its clients need, once per
/// subject or pattern however many local subscriptions share it. Also who to tell of values
/// missed: the local subscriptions that each NATS subscription serves.
///
/// Only plain subjects' values cross the cluster this way, so a named subscription counts
/// when its subject is plain; every pattern subscription counts.
///
/// Thread rules: loop thread only. Lifetime rule: owned by its `ClusterSubjectStore`; holds
/// each local subscription from `began` to `ended`, which `SubscriptionTable` calls in pairs.
final class ClusterInterest {
    private struct Interest {
        let nats: NATSSubscription?
        let pattern: SubjectPattern
        var members: [ObjectIdentifier: SessionSubscription]
    }

    /// By the subject or pattern's text.
    private var interests: [String: Interest] = [:]
    /// The texts of `interests` that are patterns, for the values of subjects they match.
    private var patterns: Set<String> = []
    private let subscribe: (String) -> NATSSubscription?

    /// `subscribe` makes the NATS subscription for a subject or pattern.
    init(subscribe: @escaping (String) -> NATSSubscription?) { self.subscribe = subscribe }

    /// How many NATS subscriptions the node holds for its clients.
    var count: Int { interests.count }

    /// Whether `subscription` is one that values from other nodes reach.
    static func counts(_ subscription: SessionSubscription) -> Bool {
        subscription.isPattern || subscription.entry?.kind == .subject
    }

    /// Returns true when it made a NATS subscription for it, which NATS may not have read yet.
    @discardableResult
    func began(_ subscription: SessionSubscription) -> Bool {
        guard Self.counts(subscription) else { return false }
        let key = subscription.pattern.text
        let isNew = interests[key] == nil
        if isNew {
            interests[key] = Interest(nats: subscribe(key), pattern: subscription.pattern, members: [:])
            if subscription.isPattern { patterns.insert(key) }
        }
        interests[key]!.members[ObjectIdentifier(subscription)] = subscription
        return isNew
    }

    func ended(_ subscription: SessionSubscription) {
        guard Self.counts(subscription) else { return }
        let key = subscription.pattern.text
        guard var interest = interests[key] else { return }
        interest.members[ObjectIdentifier(subscription)] = nil
        if interest.members.isEmpty {
            interest.nats?.unsubscribe()
            interests[key] = nil
            patterns.remove(key)
        } else {
            interests[key] = interest
        }
    }

    /// Tells every local subscription that values from other nodes reach through `subject`
    /// that `count` of them were missed (nil: how many is not known): each gets a `dropped`
    /// event before its next value.
    func noteMissed(_ count: UInt64?, in subject: String) {
        interests[subject]?.members.values.forEach { $0.noteDropped(count) }
        for key in patterns where interests[key]!.pattern.matches(subject) {
            interests[key]!.members.values.forEach { $0.noteDropped(count) }
        }
    }

    /// Tells every subscription values from other nodes reach that it may have missed some.
    func noteMissedEverywhere() {
        for interest in interests.values { interest.members.values.forEach { $0.noteDropped(nil) } }
    }
}
