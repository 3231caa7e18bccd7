import Runnel
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// A loop's replicas of subjects another loop owns (decision 0011), and its way to publish to
/// them: an entry each, made from
/// the owner's snapshot and fed by its updates (`ReplicaSource`), which this loop's sessions
/// subscribe to as they would to the subject itself; its events are framed and written here.
/// A replica is asked for when a `sub` first names its subject here and let go at the end of
/// the turn its last subscription here ends; meanwhile the owner is told, once a turn, how
/// many subscribers it has here (what its `pub` counts as receivers, its `list` as
/// subscribers). A request here that the owner carries out (`ForwardedRequest`: `pub`,
/// `create`, an ending, `list`; an HTTP request's values, `PublishedBatch`) goes to it with
/// the turn's other requests, and its answer comes back with the updates.
///
/// The values a replica keeps (a replay subject's history) share their bytes with the owner's
/// and are counted there against `max_retained_bytes`, not again here: `ledger` ages the
/// replicas that keep values for a time (`retain_s`) and counts for nothing else.
///
/// Thread rules: this loop's thread; `reader`'s inbox is posted to by the owner's loop.
/// Lifetime rule: the server holds it; it holds its replicas until they are let go.
final class SubjectReplicas: @unchecked Sendable {
    /// What this turn tells the owner, at its end: the subjects to open, and the replicas whose
    /// subscribers changed.
    private enum Note {
        case open(String)
        case changed(SubjectEntry)
        /// The subscriptions naming a replica crossed 0: its counts at that moment.
        case crossed(SubjectEntry, ReplicaReaders)
        /// A pattern subscription here began (with what it reads) or ended (nil).
        case patternReach(UInt64, PatternReader?)
        case forward(ForwardedRequest, ticket: UInt64)
        case publishValues(ForwardedPublish, ticket: UInt64)
        case publish(PublishedBatch, publisher: UInt64, ticket: UInt64)
        case hold(publisher: UInt64, PublisherHold, began: Bool)
        case watch(String, ticket: UInt64)
        case unwatch(String)
        case close(UInt64)
        case caughtUp
        case join
        case interest(InterestChange)
        case release([ReplicatedValues])
    }

    private let owner: LoopInbox<ReplicaRequest>
    private let reader: ReplicaReader
    private let loop: LoopScheduler
    private let ledger: RetainedValues
    /// This loop's `max_publish_eval_ms`, which each value delivered here is fanned out under.
    let publishBound: PublishEvaluationBound
    private var byName: [String: SubjectEntry] = [:]
    private var byFeed: [UInt64: SubjectEntry] = [:]
    /// Who waits for the replica of a subject asked for.
    private var waiting: [String: [(Result<SubjectEntry, ProtocolError>) -> Void]] = [:]
    /// Who waits for the answer to each request forwarded to the owner, by ticket.
    private var answers: [UInt64: (SessionReply.Outcome, _ atOnce: Bool) -> Void] = [:]
    /// Who waits for the receipt of each batch sent to the owner, by ticket.
    private var receipts: [UInt64: (PublishedBatch.Receipt) -> Void] = [:]
    /// Who waits for the receipt of each run of `pub`s sent to the owner, by ticket.
    private var publishReceipts: [UInt64: (ForwardedPublish.Receipt, _ atOnce: Bool) -> Void] = [:]
    private var lastTicket: UInt64 = 0
    /// Replicas held for a `sub` that waits for others (`pin`), and how many times each.
    private var pins: [ObjectIdentifier: Int] = [:]
    /// The patterns watched, and the pattern subscriptions here.
    private let patterns = ReplicaPatterns()
    /// The replicas whose subscriptions naming them, as the owner has been or is about to be
    /// told, are more than 0. A change across 0 is told in its place among the turn's requests
    /// rather than folded into the turn's last count, so `$sys.occupancy` reports each 0 -> 1
    /// and 1 -> 0 at once, as for the owner's own subscriptions.
    private var occupied = Set<ObjectIdentifier>()
    /// The number the last pattern subscription here was given (`RemotePatternReach`).
    private var lastPatternSubscription: UInt64 = 0
    private let notes: LoopOutbox<Note>
    /// The run of one session's `pub`s the turn's requests end with (`forward`, `extend`), by
    /// ticket.
    private let publishRun: OutboxRun<Note, ForwardedPublish, ForwardedPublish.Value>
    /// This loop's publishers, numbered for the owner's lagging subscribers, and the owner's,
    /// as this loop's lagging subscribers hold them.
    private let registry = PublisherRegistry()
    let publishers: RemotePublishers
    /// Whether the owner's link to its cluster is up (`ReplicaUpdate.linked`).
    private var ownerIsLinked = true
    /// What this loop's subscriptions read, told to the owner when it shares the subjects with
    /// a cluster; nil when it does not.
    private(set) var interest: RemoteInterest?
    /// Tells each subscription here that reads the subject named that it missed the count of
    /// its values (the owner's `ReplicaUpdate.missed`); set by the server.
    var missed: (_ subject: String, _ count: UInt64) -> Void = { _, _ in }

    /// Replicas of the subjects whose owner reads `owner`, on `loop`; a replay subject's keeps
    /// at most `retained.maxReplayBytes`, by `retained.clock`. `pauses`: the server's, which
    /// its sessions' lagging subscribers read. `clustered`: the owner shares the subjects with
    /// a cluster.
    init(
        owner: LoopInbox<ReplicaRequest>, loop: LoopScheduler, retained: RetainedValues, pauses: PublisherPauses,
        publishBound: PublishEvaluationBound, clustered: Bool
    ) {
        self.owner = owner
        self.loop = loop
        self.publishBound = publishBound
        ledger = RetainedValues(maxBytes: .max, maxReplayBytes: retained.maxReplayBytes, clock: retained.clock)
        let reference = LoopBoundReference<SubjectReplicas>(loop: loop)
        notes = LoopOutbox(loop: loop) { notes in
            guard let replicas = reference.object else { return }
            owner.post(contentsOf: replicas.requests(telling: notes))
        }
        publishRun = OutboxRun(of: notes) { ticket, head, values in
            var publish = head
            publish.values = values
            return .publishValues(publish, ticket: ticket)
        }
        reader = ReplicaReader(inbox: LoopInbox(loop: loop) { updates in reference.object?.receive(updates) })
        publishers = RemotePublishers(pauses: pauses, maker: nil) { publisher, hold, began in
            reference.object?.notes.post(.hold(publisher: publisher, hold, began: began))
        }
        reference.object = self
        if clustered {
            interest = RemoteInterest { change in reference.object?.notes.post(.interest(change)) }
        }
        notes.post(.join)
    }

    /// `unavailable` while the owner's link to its cluster is down, as its store's
    /// `checkShared` is.
    func checkShared() throws(ProtocolError) {
        guard ownerIsLinked else { throw SharedLink.down }
    }

    /// Whether the owner's link to its cluster is down, as the owner last told.
    var isOwnersLinkDown: Bool { !ownerIsLinked }

    /// The number the owner knows `gate`, a publisher of this loop's, by.
    func number(of gate: PublisherGate) -> UInt64 { registry.number(of: gate) }

    /// The replica of `name`, when this loop holds one.
    subscript(name: String) -> SubjectEntry? { byName[name] }

    /// The weight of the values the owner has handed this loop and it has not delivered yet
    /// (`ReplicaBacklog`). Any thread.
    var backlog: Int { reader.backlog.current }

    /// The replicas held here whose names begin with `prefix` (a pattern subscription's holds
    /// every subject it matches).
    func list(prefix: String) -> [SubjectEntry] {
        byName.values.filter { $0.name.hasPrefix(prefix) }.sorted { $0.name < $1.name }
    }

    /// Asks the owner for the replica of `name` and hands it to `then` once it is here, or the
    /// refusal a `sub` of it would get on the owner.
    func open(_ name: String, then: @escaping (Result<SubjectEntry, ProtocolError>) -> Void) {
        if waiting[name] != nil { return waiting[name]!.append(then) }
        waiting[name] = [then]
        notes.post(.open(name))
    }

    /// Sends `request`, which a session here received, to the owner with this turn's other
    /// requests, and hands `then` what its reply says once the owner has answered, and whether
    /// the owner answered at once (`ReplicaUpdate.answered`).
    func forward(_ request: ForwardedRequest, then: @escaping (SessionReply.Outcome, _ atOnce: Bool) -> Void) {
        lastTicket += 1
        answers[lastTicket] = then
        notes.post(.forward(request, ticket: lastTicket))
    }

    /// Sends `value`, a `pub` to `subject` a session here received with `grant`'s rights from
    /// its publisher numbered `publisher`, to the owner with this turn's other requests, and
    /// hands `then` the receipt of the run it begins (`extend`), and whether the owner knew it
    /// at once; returns the run's ticket.
    func forward(
        _ value: ForwardedPublish.Value, to subject: String, grant: TokenGrant, publisher: UInt64,
        then: @escaping (ForwardedPublish.Receipt, _ atOnce: Bool) -> Void
    ) -> UInt64 {
        lastTicket += 1
        publishReceipts[lastTicket] = then
        let head = ForwardedPublish(subject: subject, values: [], grant: grant, publisher: publisher)
        publishRun.start(lastTicket, head, with: value)
        return lastTicket
    }

    /// Adds a value to the run of `pub`s forwarded as `ticket`, when it is still this turn's
    /// last request to the owner; false when it is not (it went, or another followed).
    @inline(__always)
    func extend(_ ticket: UInt64, with raw: RawJSON, members: JSONMemberIndex) -> Bool {
        guard publishRun.isOpen(ticket) else { return false }
        publishRun.append(ForwardedPublish.Value(raw: raw, members: members))
        return true
    }

    /// Sends `batch`, an HTTP request's values published by this loop's publisher numbered
    /// `publisher`, to the owner with this turn's other requests, and hands `then` its receipt.
    func publish(
        _ batch: PublishedBatch, publisher: UInt64, then: @escaping (PublishedBatch.Receipt) -> Void
    ) {
        lastTicket += 1
        receipts[lastTicket] = then
        notes.post(.publish(batch, publisher: publisher, ticket: lastTicket))
    }

    /// `entry`'s values (a map's without its removals) for a stage of a session here that
    /// names the subject: the chain holds the replica from now until it is let go
    /// (`ReplicaHold`), and each subscription to it counts among the subject's subscribers at
    /// the owner, as a stage's on the owner does.
    func reading(_ entry: SubjectEntry) -> Signal<Message> {
        let values = entry.map == nil ? entry.subject : entry.subject.filter { $0.mark == nil }
        let held = LoopBound((replicas: self, entry: entry), loop: loop)
        pin(entry)
        let hold = ReplicaHold(loop: loop) { [self] in unpin(entry) }
        return Signal.create { subscriber in
            _ = hold  // the chain holds it, so the replica stays while the chain may read it
            let subscription = values.subscribe(subscriber)
            held.value.replicas.subscribersChanged(held.value.entry)
            return Disposable {
                subscription.dispose()
                held.value.replicas.subscribersChanged(held.value.entry)
            }
        }
    }

    /// The values of `name`, which a stage names at run time and whose replica is not here:
    /// once the owner has sent it, read as `reading` reads it (`reached` told of it first), or
    /// the owner's refusal, as `late` makes it, ends the signal.
    func later(
        _ name: String, failing late: @escaping @Sendable (ProtocolError) -> ProtocolError,
        reached: @escaping @Sendable (SubjectEntry) -> Void
    ) -> Signal<Message> {
        let replicas = LoopBound(self, loop: loop)
        return Signal.create { subscriber in
            let reading = SerialDisposable()
            replicas.value.open(name) { answer in
                guard !reading.isDisposed else { return }
                switch answer {
                case .success(let entry):
                    reached(entry)
                    reading.inner = replicas.value.reading(entry).subscribe(subscriber)
                case .failure(let error):
                    subscriber.sendError(late(error))
                }
            }
            return reading
        }
    }

    /// Whether the owner has sent every subject `pattern` matches, and sends each it makes.
    func isWatching(_ pattern: SubjectPattern) -> Bool { patterns.isWatching(pattern) }

    /// Asks the owner for a replica of every subject `pattern` matches, now and from now on,
    /// and runs `then` once those there are now are here.
    func watch(_ pattern: SubjectPattern, then: @escaping () -> Void) {
        guard patterns.awaitWatch(of: pattern, then: then) else { return }
        lastTicket += 1
        answers[lastTicket] = { [weak self] _, _ in
            // Nothing subscribed meanwhile: the pattern is let go.
            guard let self, patterns.watchAnswered(pattern) else { return }
            unwatch(pattern)
        }
        notes.post(.watch(pattern.text, ticket: lastTicket))
    }

    /// A pattern subscription of a session here, once the pattern is watched (`isWatching`):
    /// the values of every replica it matches, replays first, as `MemorySubjectStore`'s
    /// `patternSignal` gives the owner's.
    func patternSignal(_ pattern: SubjectPattern, admitting: (@Sendable (String) -> Bool)?) -> Signal<Message> {
        let replicas = LoopBound(self, loop: loop)
        return Signal.create { subscriber in
            let watcher = PatternWatcher(pattern: pattern, downstream: subscriber, admits: admitting)
            let this = replicas.value
            this.patterns.began(watcher, reading: this.byName.values)
            // The owner counts it for `$sys.occupancy`; each replica it matches has one subscriber
            // more (`pub`'s receivers).
            this.lastPatternSubscription += 1
            let id = this.lastPatternSubscription
            this.notes.post(.patternReach(id, watcher.reader))
            this.matchesChanged(pattern)
            return Disposable {
                let this = replicas.value
                this.notes.post(.patternReach(id, nil))
                if this.patterns.ended(watcher) {
                    this.unwatch(pattern)
                } else {
                    this.matchesChanged(pattern)
                }
            }
        }
    }

    /// Holds the watched `pattern` until the hold returned is let go (`ReplicaHold`).
    func holdWatch(of pattern: SubjectPattern) -> ReplicaHold {
        patterns.hold(pattern)
        return ReplicaHold(loop: loop) { [self] in
            if patterns.release(pattern) { unwatch(pattern) }
        }
    }

    /// No pattern subscription to `pattern` is left: the owner is told, and the replicas only
    /// it held are let go at the turn's end.
    private func unwatch(_ pattern: SubjectPattern) {
        patterns.forget(pattern)
        notes.post(.unwatch(pattern.text))
        matchesChanged(pattern)
    }

    /// The subscriptions reading each replica `pattern` matches changed.
    private func matchesChanged(_ pattern: SubjectPattern) {
        for entry in byName.values where pattern.matches(entry.name) { subscribersChanged(entry) }
    }

    /// Holds `entry` until `unpin`, whatever its subscriptions: a `sub` waiting for the other
    /// replicas its stages read keeps those it has, and a stage chain the replicas of the
    /// subjects it names (`ReplicaHold`).
    func pin(_ entry: SubjectEntry) { pins[ObjectIdentifier(entry), default: 0] += 1 }

    func unpin(_ entry: SubjectEntry) {
        let key = ObjectIdentifier(entry)
        guard let count = pins[key] else { return assertionFailure("a replica unpinned more than pinned") }
        pins[key] = count == 1 ? nil : count - 1
        subscribersChanged(entry)
    }

    /// A subscription to `entry` began or ended here: the owner is told at the end of the turn,
    /// and the replica let go if none is left.
    func subscribersChanged(_ entry: SubjectEntry) {
        guard entry.replicaFeed != nil else { return }
        let named = entry.namedSubscriptions
        if (named > 0) != occupied.contains(ObjectIdentifier(entry)) {
            if named > 0 {
                occupied.insert(ObjectIdentifier(entry))
            } else {
                occupied.remove(ObjectIdentifier(entry))
            }
            notes.post(.crossed(entry, readers(of: entry)))
        }
        notes.post(.changed(entry))
    }

    private func receive(_ updates: [ReplicaUpdate]) {
        // What the values delivered weigh in the backlog, handed back at the end of the batch.
        var weight = 0
        // Turns' values to be let go where their bytes were made (not here).
        var delivered: [ReplicatedValues] = []
        defer {
            if !delivered.isEmpty { notes.post(.release(delivered)) }
            if weight > 0 && reader.backlog.delivered(weight) { notes.post(.caughtUp) }
        }
        for update in updates {
            switch update {
            case .opened(let snapshot):
                // A subject asked for while a watched pattern's brought it: one replica is kept.
                if let held = byName[snapshot.name], !held.isDeleted {
                    notes.post(.close(snapshot.feed))
                    for then in waiting.removeValue(forKey: snapshot.name) ?? [] { then(.success(held)) }
                    continue
                }
                let entry = ReplicaEntries.entry(of: snapshot, countingIn: ledger)
                byName[snapshot.name] = entry
                byFeed[snapshot.feed] = entry
                // Let go at the turn's end if no subscription takes it.
                notes.post(.changed(entry))
                patterns.attach(entry)
                for then in waiting.removeValue(forKey: snapshot.name) ?? [] { then(.success(entry)) }
            case .refused(let name, let error):
                for then in waiting.removeValue(forKey: name) ?? [] { then(.failure(error)) }
            case .values(let feed, let turn, let places):
                let values = turn.values
                if values.count >= ReplicatedValues.releasedByMaker, turn.maker !== reader, delivered.last !== turn {
                    delivered.append(turn)
                }
                for place in places { weight &+= values[place].weight }
                guard let entry = byFeed[feed] else { continue }
                deliver(values, at: places, to: entry)
            case .release:
                // Let go as the batch goes: here, where its bytes were made.
                continue
            case .linked(let up):
                ownerIsLinked = up
            case .missedBy(let subscription, let count):
                interest?.missed(count, by: subscription)
            case .missed(let feed, let count):
                guard let entry = byFeed[feed] else { continue }
                missed(entry.name, count)
            case .hold(let publisher, let hold, let began):
                registry.hold(publisher, hold, began: began)
            case .policy(let feed, let policy):
                byFeed[feed]?.label.slowConsumer = policy
            case .ended(let feed, let how):
                guard let entry = byFeed[feed] else { continue }
                end(entry, how)
            case .answered(let ticket, let answer, let atOnce):
                answers.removeValue(forKey: ticket)?(answer, atOnce)
            case .published(let ticket, let receipt):
                receipts.removeValue(forKey: ticket)?(receipt)
            case .publishedValues(let ticket, let receipt, let atOnce):
                publishReceipts.removeValue(forKey: ticket)?(receipt, atOnce)
            }
        }
    }

    private func end(_ entry: SubjectEntry, _ how: ReplicaEnd) {
        entry.isEnding = true
        switch how {
        case .completed: entry.subject.sendCompleted()
        case .failed(let error): entry.subject.sendError(error)
        case .deleted:
            forget(entry)
            entry.isDeleted = true
            patterns.detach(entry)
            entry.subject.sendCompleted()
        }
    }

    private func forget(_ entry: SubjectEntry) {
        guard let feed = entry.replicaFeed, byFeed[feed] === entry else { return }
        byFeed[feed] = nil
        if byName[entry.name] === entry { byName[entry.name] = nil }
        occupied.remove(ObjectIdentifier(entry))
        entry.stopCountingRetained()
    }

    /// The requests this turn's notes make: each open as it was asked, each changed replica's
    /// count once, where it last changed (after its crossings of 0), or its release when no
    /// subscription is left.
    private func requests(telling notes: [Note]) -> [ReplicaRequest] {
        var requests: [ReplicaRequest] = []
        var lastChange: [ObjectIdentifier: Int] = [:]
        for (index, note) in notes.enumerated() {
            if case .changed(let entry) = note { lastChange[ObjectIdentifier(entry)] = index }
        }
        for (index, note) in notes.enumerated() {
            switch note {
            case .open(let name):
                requests.append(.open(name: name, reader: reader))
            case .forward(let request, let ticket):
                requests.append(.forward(request, ticket: ticket, reader: reader))
            case .publishValues(let publish, let ticket):
                requests.append(.publishValues(publish, ticket: ticket, reader: reader))
            case .publish(let batch, let publisher, let ticket):
                requests.append(.publish(batch, publisher: publisher, ticket: ticket, reader: reader))
            case .hold(let publisher, let hold, let began):
                requests.append(.hold(publisher: publisher, hold, began: began))
            case .watch(let pattern, let ticket):
                let holding = byName.keys.filter { SubjectPattern(pattern).matches($0) }
                requests.append(.watch(pattern: pattern, holding: holding, ticket: ticket, reader: reader))
            case .unwatch(let pattern):
                requests.append(.unwatch(pattern: pattern, reader: reader))
            case .close(let feed):
                requests.append(.close(feed: feed))
            case .caughtUp:
                requests.append(.caughtUp(reader: reader))
            case .join:
                requests.append(.join(reader: reader))
            case .interest(let change):
                requests.append(.interest(change, reader: reader))
            case .release(let turns):
                requests.append(.release(turns))
            case .crossed(let entry, let readers):
                guard let feed = entry.replicaFeed, byFeed[feed] === entry else { continue }
                requests.append(.count(feed: feed, readers))
            case .patternReach(let id, let pattern):
                requests.append(.patternReach(id: id, pattern, reader: reader))
            case .changed(let entry):
                guard lastChange[ObjectIdentifier(entry)] == index, let feed = entry.replicaFeed,
                    byFeed[feed] === entry
                else { continue }
                // Held by the sessions' subscriptions naming it and their stages reading it.
                if entry.namedSubscriptions == 0 && entry.subject.subscriberCount == 0
                    && pins[ObjectIdentifier(entry)] == nil
                    && !patterns.holds(entry.name)
                {
                    forget(entry)
                    requests.append(.close(feed: feed))
                } else {
                    requests.append(.count(feed: feed, readers(of: entry)))
                }
            }
        }
        return requests
    }

    /// This loop's subscriptions to `entry`'s subject, as the owner is told them.
    private func readers(of entry: SubjectEntry) -> ReplicaReaders {
        ReplicaReaders(
            subscribers: entry.subscriberCount, named: entry.namedSubscriptions,
            conflating: entry.conflatingSubscriptions)
    }
}
