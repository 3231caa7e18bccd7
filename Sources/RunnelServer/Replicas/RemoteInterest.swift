import RunnelProtocol

/// What the subscriptions of a loop that does not own the subjects read, told to their owner
/// when it shares them with a cluster (decision 0011): the owner's cluster then holds the NATS
/// subscriptions that bring other nodes' values of them, as for its own sessions', and its gap
/// notices come back to the subscription they are about (`ReplicaUpdate.missedBy`).
///
/// The reader's side: a `SubscriptionInterest` as its sessions' `SubscriptionTable`s use one,
/// numbering each subscription for the owner, which stands for it with an `InterestStandIn`.
/// A subscription whose values cross over core NATS may have made the owner a NATS
/// subscription: `began` returns true, and its `sub` reply waits for the owner to say that
/// the other nodes know (`Session.replyWhenOwnerKnows`).
///
/// Thread rules: its loop's thread. Lifetime rule: its `SubjectReplicas` holds it; it holds
/// each subscription from `began` until the last of what it reads has ended.
final class RemoteInterest: SubscriptionInterest {
    /// A subscription told to the owner: its number there, whether it is counted itself
    /// (`began`), and the subjects its stages read (`beganReading`).
    private struct Told {
        let number: UInt64
        let subscription: any InterestedSubscription
        var isOwn = false
        var reading: Set<String> = []
    }

    private var told: [ObjectIdentifier: Told] = [:]
    private var byNumber: [UInt64: ObjectIdentifier] = [:]
    private var lastNumber: UInt64 = 0
    private let tell: (InterestChange) -> Void

    /// Tells the owner each change through `tell`, with the turn's other requests.
    init(tell: @escaping (InterestChange) -> Void) { self.tell = tell }

    func began(_ subscription: any InterestedSubscription) -> Bool {
        let number = numbered(subscription) { $0.isOwn = true }
        tell(.began(subscription: number, pattern: subscription.pattern.text, plain: subscription.readsPlainValues))
        return subscription.readsPlainValues
    }

    func ended(_ subscription: any InterestedSubscription) {
        guard let number = forgetting(subscription, { $0.isOwn = false }) else { return }
        tell(.ended(subscription: number))
    }

    func beganReading(_ name: String, plain: Bool, by subscription: any InterestedSubscription) -> Bool {
        let number = numbered(subscription) { $0.reading.insert(name) }
        tell(.beganReading(subscription: number, name: name, plain: plain))
        return plain
    }

    func endedReading(_ name: String, by subscription: any InterestedSubscription) {
        guard let number = forgetting(subscription, { $0.reading.remove(name) }) else { return }
        tell(.endedReading(subscription: number, name: name))
    }

    /// The owner's cluster missed `count` values (nil: how many is not known) that the
    /// subscription numbered `number` reads.
    func missed(_ count: UInt64?, by number: UInt64) {
        guard let key = byNumber[number] else { return }
        told[key]?.subscription.noteDropped(count)
    }

    /// `subscription`'s number, given now when it has none, after `change`.
    private func numbered(_ subscription: any InterestedSubscription, _ change: (inout Told) -> Void) -> UInt64 {
        let key = ObjectIdentifier(subscription)
        if told[key] == nil {
            lastNumber += 1
            told[key] = Told(number: lastNumber, subscription: subscription)
            byNumber[lastNumber] = key
        }
        change(&told[key]!)
        return told[key]!.number
    }

    /// `subscription`'s number, after `change`; forgotten when it reads nothing more. Nil when
    /// it was never told.
    private func forgetting(_ subscription: any InterestedSubscription, _ change: (inout Told) -> Void) -> UInt64? {
        let key = ObjectIdentifier(subscription)
        guard var entry = told[key] else { return nil }
        change(&entry)
        if entry.isOwn || !entry.reading.isEmpty {
            told[key] = entry
        } else {
            told[key] = nil
            byNumber[entry.number] = nil
        }
        return entry.number
    }
}

/// A change to what a reader's subscriptions read, as its owner is told (`RemoteInterest`).
enum InterestChange: Sendable {
    case began(subscription: UInt64, pattern: String, plain: Bool)
    case ended(subscription: UInt64)
    case beganReading(subscription: UInt64, name: String, plain: Bool)
    case endedReading(subscription: UInt64, name: String)
}

/// The owner's side: a reader's subscriptions as its cluster's interest holds them, each a
/// stand-in whose gap notices go back to the reader (`ReplicaUpdate.missedBy`).
///
/// Thread rules: the owner's loop. Lifetime rule: its `ReaderLink` holds it; it holds each
/// stand-in while the subscription reads anything.
final class RemoteInterests {
    private var standIns: [UInt64: InterestStandIn] = [:]

    /// Carries out `change` on `interest`; returns true when that made a NATS subscription.
    /// `missed` tells the reader of a gap.
    func apply(
        _ change: InterestChange, to interest: any SubscriptionInterest,
        missed: @escaping (_ subscription: UInt64, UInt64?) -> Void
    ) -> Bool {
        switch change {
        case .began(let number, let pattern, let plain):
            let standIn = standIn(number, missed: missed)
            standIn.pattern = SubjectPattern(pattern)
            standIn.readsPlainValues = plain
            standIn.holds += 1
            return interest.began(standIn)
        case .beganReading(let number, let name, let plain):
            let standIn = standIn(number, missed: missed)
            standIn.holds += 1
            return interest.beganReading(name, plain: plain, by: standIn)
        case .ended(let number):
            guard let standIn = standIns[number] else { return false }
            interest.ended(standIn)
            release(standIn)
        case .endedReading(let number, let name):
            guard let standIn = standIns[number] else { return false }
            interest.endedReading(name, by: standIn)
            release(standIn)
        }
        return false
    }

    private func standIn(_ number: UInt64, missed: @escaping (UInt64, UInt64?) -> Void) -> InterestStandIn {
        if let known = standIns[number] { return known }
        let made = InterestStandIn(number: number, missed: missed)
        standIns[number] = made
        return made
    }

    private func release(_ standIn: InterestStandIn) {
        standIn.holds -= 1
        if standIn.holds == 0 { standIns[standIn.number] = nil }
    }
}

/// One of a reader's subscriptions, as the owner's cluster interest holds it. Thread rules:
/// the owner's loop.
final class InterestStandIn: InterestedSubscription {
    let number: UInt64
    var pattern = SubjectPattern("")
    var readsPlainValues = false
    /// What it was begun for and has not ended: itself, and each subject its stages read.
    var holds = 0
    private let missed: (UInt64, UInt64?) -> Void

    init(number: UInt64, missed: @escaping (UInt64, UInt64?) -> Void) {
        self.number = number
        self.missed = missed
    }

    func noteDropped(_ count: UInt64?) { missed(number, count) }
}
