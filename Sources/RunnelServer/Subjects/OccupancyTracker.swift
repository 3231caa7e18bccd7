import Runnel
import RunnelBytes
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// `$sys.occupancy.S` (version 1.3): read-only behavior subjects whose value,
/// `{"subscribers":N}`, is how many subscriptions a value published to S now would reach: those
/// naming S and the pattern subscriptions that match it and may read it. Subscriptions to the
/// server's own names are not counted.
///
/// An occupancy subject exists while someone reads it: made when a `sub` (or a stage) names
/// it, or, while a subscription to a pattern `$sys.occupancy.P` lives, for every subject
/// matching P that exists or whose count changes; let go once nothing reads it. It lives in
/// the store's memory (`SubjectStore.local`): nothing of it is journaled. In a cluster the
/// count is every node's (`peers`: this node's own, plus what the other nodes last said of
/// theirs, and this node tells them its own of the subjects they watch). Its value changes at
/// once when the count goes from 0 to 1 or back, and otherwise at most once every `coalescing`
/// (the latest count, by one timer for all).
///
/// Told by `Session.subscribe` once a subscription's chain runs and by
/// `SubscriptionTable.forget`, so a count is taken with the subscription's pattern watcher in
/// place or gone. Nothing here runs on `pub`.
///
/// Thread rules: loop thread only. Lifetime rule: the server owns it; it holds the occupancy
/// entries it made until it lets them go (the store holds them meanwhile too), and its timer
/// holds it weakly. `@unchecked Sendable` only so that timer may name it: it is loop-confined.
final class OccupancyTracker: @unchecked Sendable {
    /// The least time between two values of one occupancy subject but for 0 -> 1 and 1 -> 0.
    static let coalescing = Duration.milliseconds(100)

    private let store: MemorySubjectStore
    private let scheduler: LoopScheduler
    /// Each subject whose occupancy someone reads: its occupancy entry, the count its
    /// subscribers last got and when, and whether a newer count waits for `coalescing`.
    private var watches: [String: Watch] = [:]
    /// The patterns P of the live subscriptions to `$sys.occupancy.P`, each with how many.
    private var patterns: [SubjectPattern: Int] = [:]
    /// Sends the counts that waited; armed while one waits.
    private var timer: Disposable?
    /// The other loops' pattern subscriptions a value of a subject would reach (decision 0011;
    /// the subscriptions naming it are in the store's count); set before the server serves.
    var otherLoopsPatternReach: ((String) -> Int)?
    /// The other nodes' counts, in a cluster (set before the server serves).
    var peers: (any OccupancyPeers)?

    private struct Watch {
        let entry: SubjectEntry
        var sent: Int
        var sentAt: SchedulerTime
        var isDue = false
    }

    init(store: MemorySubjectStore, scheduler: LoopScheduler) {
        self.store = store
        self.scheduler = scheduler
    }

    /// The occupancy entry `name` (`$sys.occupancy.S`) stands for, made when it does not
    /// exist; `unknown_subject` for any other reserved name.
    func entry(named name: String) throws(ProtocolError) -> SubjectEntry {
        guard let subject = SystemSubjects.occupied(by: name), !SubjectName.isPattern(subject) else {
            throw ProtocolError(.unknownSubject, "no subject '\(name)': names beginning with '$' are the server's")
        }
        return watch(subject).entry
    }

    /// `subscription`'s chain runs now: the counts it adds to.
    func began(_ subscription: SessionSubscription) {
        if let occupied = occupancyPattern(of: subscription) { patternBegan(occupied) }
        countsChanged(by: subscription)
    }

    /// `subscription` is gone: the counts it took from, and what nobody reads any more.
    func ended(_ subscription: SessionSubscription) {
        if let occupied = occupancyPattern(of: subscription) {
            patternEnded(occupied)
        } else if let entry = subscription.entry, let subject = SystemSubjects.occupied(by: entry.name) {
            releaseIfUnread(subject)
        }
        countsChanged(by: subscription)
    }

    /// Something reads `$sys.occupancy.P` for `occupied`, P (a subscription here, or another
    /// loop's watch of the pattern, decision 0011): every subject it matches is watched, now
    /// and as it comes.
    func patternBegan(_ occupied: SubjectPattern) {
        patterns[occupied, default: 0] += 1
        for entry in store.list(prefix: "") where isCounted(entry.name) && occupied.matches(entry.name) {
            _ = watch(entry.name)
        }
    }

    /// One reader of `$sys.occupancy.P` less: the subjects nobody else reads are let go.
    func patternEnded(_ occupied: SubjectPattern) {
        guard let count = patterns[occupied] else { return }
        patterns[occupied] = count > 1 ? count - 1 : nil
        for (subject, _) in watches where occupied.matches(subject) { releaseIfUnread(subject) }
    }

    // MARK: Counting

    private func occupancyPattern(of subscription: SessionSubscription) -> SubjectPattern? {
        guard subscription.isPattern, let occupied = SystemSubjects.occupied(by: subscription.pattern.text) else {
            return nil
        }
        return SubjectPattern(occupied)
    }

    private func isCounted(_ name: String) -> Bool { !SystemSubjects.isReserved(name) }

    /// Looks again at the subjects whose count `subscription` is part of.
    private func countsChanged(by subscription: SessionSubscription) {
        if subscription.isPattern {
            patternCountsChanged(subscription.pattern)
        } else if let name = subscription.entry?.name {
            subjectCountChanged(name)
        }
    }

    /// The subscriptions naming `name` changed: its count is looked at again, here and by the
    /// other nodes.
    private func subjectCountChanged(_ name: String) {
        guard isCounted(name) else { return }
        if let peers, peers.watchedElsewhere.contains(name) { peers.tell(name, count: localCount(of: name)) }
        countChanged(of: name)
    }

    /// A pattern subscription to `pattern`, here or on another loop (decision 0011), began or
    /// ended: the counts of the subjects it matches are looked at again, here and by the
    /// other nodes.
    func patternCountsChanged(_ pattern: SubjectPattern) {
        guard isCounted(pattern.text) else { return }
        if let peers {
            for subject in peers.watchedElsewhere where pattern.matches(subject) {
                peers.tell(subject, count: localCount(of: subject))
            }
        }
        for subject in watches.keys where pattern.matches(subject) { update(subject) }
        guard !patterns.isEmpty else { return }
        for entry in store.list(prefix: "")
        where isCounted(entry.name) && pattern.matches(entry.name) && watches[entry.name] == nil
            && isWatchedByPattern(entry.name)
        {
            _ = watch(entry.name)
        }
    }

    /// `subject`'s count may have changed: its occupancy is looked at again, or made when a
    /// pattern reads it.
    private func countChanged(of subject: String) {
        if watches[subject] != nil {
            update(subject)
        } else if isWatchedByPattern(subject) {
            _ = watch(subject)
        }
    }

    /// Another loop's counts of `name`'s subscriptions changed (decision 0011): for a subject,
    /// what its occupancy says, here and to the other nodes; for an occupancy subject, whether
    /// anybody still reads it.
    func replicaCountsChanged(_ name: String) {
        if let subject = SystemSubjects.occupied(by: name) { return releaseIfUnread(subject) }
        subjectCountChanged(name)
    }

    private func isWatchedByPattern(_ subject: String) -> Bool { patterns.keys.contains { $0.matches(subject) } }

    /// This node's own count of `subject`, over every loop, for the other nodes.
    func localCount(of subject: String) -> Int {
        isCounted(subject) ? store.subscribers(of: subject) + (otherLoopsPatternReach?(subject) ?? 0) : 0
    }

    /// The other nodes' count of `subject`, which this node watches, changed.
    func othersChanged(_ subject: String) { update(subject) }

    /// `subject` was made here from the cluster's definition (perhaps by another node, whose
    /// subscriptions count at once): watched when a pattern reads it.
    func subjectAppeared(_ subject: String) {
        guard isCounted(subject), watches[subject] == nil, isWatchedByPattern(subject) else { return }
        _ = watch(subject)
    }

    /// What a value published to `subject` now would reach: here, and on the other nodes.
    private func count(of subject: String) -> Int {
        localCount(of: subject) + (peers?.count(of: subject) ?? 0)
    }

    /// `subject`'s watch, made (with its occupancy entry, holding the count now) when there is none.
    private func watch(_ subject: String) -> Watch {
        if let watch = watches[subject] { return watch }
        peers?.watch(subject)
        let count = count(of: subject)
        let entry = SubjectEntry(
            name: SystemSubjects.occupancyPrefix + subject, kind: .behavior, capacity: nil, initial: Self.value(count),
            created: store.retained.now, maxReplayBytes: store.retained.maxReplayBytes)
        let made = Watch(entry: entry, sent: count, sentAt: scheduler.now)
        watches[subject] = made
        store.adopt(entry)
        return made
    }

    /// Lets go of `subject`'s watch when nobody reads its occupancy any more.
    private func releaseIfUnread(_ subject: String) {
        guard let watch = watches[subject], watch.entry.namedSubscriptions == 0,
            watch.entry.replicaSubscribers.feeds == 0, !isWatchedByPattern(subject)
        else { return }
        watches[subject] = nil
        peers?.unwatch(subject)
        store.delete(watch.entry)
    }

    /// Sends `subject`'s count now when it crosses 0, else within `coalescing` of the last.
    private func update(_ subject: String) {
        guard var watch = watches[subject] else { return }
        let count = count(of: subject)
        defer { watches[subject] = watch }
        guard count != watch.sent else { return watch.isDue = false }
        let due = watch.sentAt.advanced(by: Self.coalescing)
        guard (count == 0) != (watch.sent == 0) || scheduler.now >= due else {
            watch.isDue = true
            return armTimer(at: due)
        }
        send(count, to: &watch)
    }

    private func send(_ count: Int, to watch: inout Watch) {
        watch.sent = count
        watch.sentAt = scheduler.now
        watch.isDue = false
        let entry = watch.entry
        entry.published &+= 1
        entry.deliver(
            Message(
                label: entry.label, raw: Self.value(count), members: JSONMemberIndex(), seq: entry.nextSeq(),
                time: store.retained.now))
    }

    private func armTimer(at time: SchedulerTime) {
        guard timer == nil else { return }
        timer = scheduler.after(time) { [weak self] in self?.timerFired() }
    }

    /// Sends every count whose wait is over, and waits again for the rest.
    private func timerFired() {
        timer = nil
        let now = scheduler.now
        var next: SchedulerTime?
        for subject in watches.keys {
            guard var watch = watches[subject], watch.isDue else { continue }
            let due = watch.sentAt.advanced(by: Self.coalescing)
            if due <= now {
                let count = count(of: subject)
                if count != watch.sent { send(count, to: &watch) }
                watch.isDue = false
                watches[subject] = watch
            } else {
                next = min(next ?? due, due)
            }
        }
        if let next { armTimer(at: next) }
    }

    /// `{"subscribers":N}`.
    private static func value(_ count: Int) -> RawJSON {
        RawJSON(validatedBuffer: ByteBuffer(Array("{\"subscribers\":\(count)}".utf8)))
    }
}
