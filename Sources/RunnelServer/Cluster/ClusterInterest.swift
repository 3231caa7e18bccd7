import RunnelProtocol

/// Which subjects and patterns a clustered node's clients subscribe to, and who to tell of
/// values missed.
///
/// Plain subjects' values cross the cluster over core NATS, so a subscription to a plain
/// subject, and every pattern subscription, need a NATS subscription: the node holds one per
/// subject or pattern, only while some of its clients subscribe to it, however many do.
/// Subscriptions to retained subjects need none (their values come from their streams), but
/// they are kept too, to be told when their stream skipped values.
///
/// Thread rules: loop thread only. Lifetime rule: owned by its `ClusterSubjectStore`; holds
/// each local subscription from `began` to `ended`, which `SubscriptionTable` calls in pairs.
final class ClusterInterest {
    private struct Interest {
        var nats: NATSSubscription?
        let pattern: SubjectPattern
        /// Each member, with whether it needs the NATS subscription.
        var members: [ObjectIdentifier: (subscription: SessionSubscription, viaNATS: Bool)] = [:]
        var natsMembers = 0
    }

    /// By the subject or pattern's text.
    private var interests: [String: Interest] = [:]
    /// The texts of `interests` that are patterns, for the values of subjects they match.
    private var patterns: Set<String> = []
    private let subscribe: (String) -> NATSSubscription?
    private let unsubscribe: (NATSSubscription?, String) -> Void
    /// Told of each subject or pattern a NATS subscription was just made for.
    var subscribed: (String) -> Void = { _ in }

    /// `subscribe` makes the NATS subscription for a subject or pattern; `unsubscribe` ends it.
    init(
        subscribe: @escaping (String) -> NATSSubscription?,
        unsubscribe: @escaping (NATSSubscription?, String) -> Void
    ) {
        self.subscribe = subscribe
        self.unsubscribe = unsubscribe
    }

    /// How many NATS subscriptions the node holds for its clients.
    var count: Int { interests.values.count { $0.natsMembers > 0 } }

    /// The subjects and patterns the node holds NATS subscriptions to.
    var keys: [String] { interests.compactMap { $0.value.natsMembers > 0 ? $0.key : nil } }

    /// Whether a NATS subscription other than `key`'s brings the values of `subject`.
    func bringsValues(of subject: String, besides key: String) -> Bool {
        if key != subject, (interests[subject]?.natsMembers ?? 0) > 0 { return true }
        return patterns.contains {
            $0 != key && interests[$0]!.natsMembers > 0 && interests[$0]!.pattern.matches(subject)
        }
    }

    /// Whether `subscription` needs other nodes' values over core NATS.
    static func needsNATS(_ subscription: SessionSubscription) -> Bool {
        subscription.isPattern || subscription.entry?.kind == .subject
    }

    /// Returns true when it made a NATS subscription for it, which NATS may not have read yet.
    @discardableResult
    func began(_ subscription: SessionSubscription) -> Bool {
        let key = subscription.pattern.text
        let viaNATS = Self.needsNATS(subscription)
        var interest = interests[key] ?? Interest(pattern: subscription.pattern)
        if subscription.isPattern { patterns.insert(key) }
        interest.members[ObjectIdentifier(subscription)] = (subscription, viaNATS)
        var made = false
        if viaNATS {
            interest.natsMembers += 1
            if interest.natsMembers == 1 {
                interest.nats = subscribe(key)
                made = true
            }
        }
        interests[key] = interest
        if made { subscribed(key) }
        return made
    }

    func ended(_ subscription: SessionSubscription) {
        let key = subscription.pattern.text
        guard var interest = interests[key],
            let member = interest.members.removeValue(forKey: ObjectIdentifier(subscription))
        else { return }
        if member.viaNATS {
            interest.natsMembers -= 1
            if interest.natsMembers == 0 {
                unsubscribe(interest.nats, key)
                interest.nats = nil
            }
        }
        if interest.members.isEmpty {
            interests[key] = nil
            patterns.remove(key)
        } else {
            interests[key] = interest
        }
    }

    /// Tells every local subscription that values of `subject` reach that `count` of them
    /// were missed (nil: how many is not known): each gets a `dropped` event before its next
    /// value.
    func noteMissed(_ count: UInt64?, in subject: String) {
        interests[subject]?.members.values.forEach { $0.subscription.noteDropped(count) }
        for key in patterns where interests[key]!.pattern.matches(subject) {
            interests[key]!.members.values.forEach { $0.subscription.noteDropped(count) }
        }
    }

    /// Tells every subscription that other nodes' values reach over core NATS that it may have
    /// missed some (a retained subject's subscribers catch up from its stream).
    func noteMissedEverywhere() {
        for interest in interests.values {
            for member in interest.members.values where member.viaNATS { member.subscription.noteDropped(nil) }
        }
    }
}
