import RunnelProtocol

/// Which subjects and patterns a clustered node's clients subscribe to, and who to tell of
/// values missed.
///
/// Plain subjects' values cross the cluster over core NATS, so a subscription to a plain
/// subject, and every pattern subscription, need a NATS subscription: the node holds one per
/// subject or pattern, only while some of its clients subscribe to it, however many do.
/// Subscriptions to retained subjects need none (their values come from their streams), but
/// they are kept too, to be told when their stream skipped values. A subject a subscription's
/// stages read (`zipWith`, `merge`, `flattenMap`...) counts as a subscription of its own to
/// that subject (`beganReading`), so the stages see other nodes' values too, and its gaps are
/// told to the subscription that reads it.
///
/// Thread rules: loop thread only. Lifetime rule: owned by its `ClusterSubjectStore`; holds
/// each local subscription from `began` to `ended`, which `SubscriptionTable` calls in pairs.
final class ClusterInterest: SubscriptionInterest {
    private struct Interest {
        let pattern: SubjectPattern
        /// Each member, with whether it needs the NATS subscription.
        var members: [Member: (subscription: any InterestedSubscription, viaNATS: Bool)] = [:]
        var natsMembers = 0
    }

    /// A subscription to the subject or pattern itself, or one whose stages read the subject.
    private struct Member: Hashable {
        let subscription: ObjectIdentifier
        let byStages: Bool
    }

    /// By the subject or pattern's text.
    private var interests: [String: Interest] = [:]
    /// The texts of `interests` that are patterns, for the values of subjects they match.
    private var patterns: Set<String> = []
    private let subscribe: (String) -> Void
    private let unsubscribe: (String) -> Void
    /// Told of each subject or pattern a NATS subscription was just made for.
    var subscribed: (String) -> Void = { _ in }

    /// `subscribe` makes the NATS subscription for a subject or pattern; `unsubscribe` ends it.
    init(
        subscribe: @escaping (String) -> Void,
        unsubscribe: @escaping (String) -> Void
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

    /// Returns true when it made a NATS subscription for it, which NATS may not have read yet.
    @discardableResult
    func began(_ subscription: any InterestedSubscription) -> Bool {
        add(
            Member(subscription: ObjectIdentifier(subscription), byStages: false), subscription,
            to: subscription.pattern, viaNATS: subscription.readsPlainValues)
    }

    func ended(_ subscription: any InterestedSubscription) {
        remove(Member(subscription: ObjectIdentifier(subscription), byStages: false), from: subscription.pattern.text)
    }

    /// `subscription`'s stages read the subject `name` (plain: its values cross over core
    /// NATS); until `endedReading`. Returns true when it made a NATS subscription for it.
    @discardableResult
    func beganReading(_ name: String, plain: Bool, by subscription: any InterestedSubscription) -> Bool {
        add(
            Member(subscription: ObjectIdentifier(subscription), byStages: true), subscription,
            to: SubjectPattern(name), viaNATS: plain)
    }

    func endedReading(_ name: String, by subscription: any InterestedSubscription) {
        remove(Member(subscription: ObjectIdentifier(subscription), byStages: true), from: name)
    }

    private func add(
        _ member: Member, _ subscription: any InterestedSubscription, to pattern: SubjectPattern, viaNATS: Bool
    ) -> Bool {
        let key = pattern.text
        var interest = interests[key] ?? Interest(pattern: pattern)
        if pattern.isWildcard { patterns.insert(key) }
        guard interest.members[member] == nil else { return false }
        interest.members[member] = (subscription, viaNATS)
        var made = false
        if viaNATS {
            interest.natsMembers += 1
            if interest.natsMembers == 1 {
                subscribe(key)
                made = true
            }
        }
        interests[key] = interest
        if made { subscribed(key) }
        return made
    }

    private func remove(_ member: Member, from key: String) {
        guard var interest = interests[key], let removed = interest.members.removeValue(forKey: member) else {
            return
        }
        if removed.viaNATS {
            interest.natsMembers -= 1
            if interest.natsMembers == 0 { unsubscribe(key) }
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
