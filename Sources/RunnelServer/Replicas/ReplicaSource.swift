import Runnel
import RunnelProtocol
import RunnelUV

/// The owner loop's side of replicas (decision 0011): other loops ask for replicas of its
/// subjects through `inbox`, one batch a turn. Each replica is a feed, one subscriber of the
/// subject here, whose values join this turn's updates for the reader's loop (`LoopOutbox`):
/// a value crosses to a loop once, whatever its subscribers there, and a loop's updates cross
/// once a turn. Each value names its publisher, so a subscriber lagging behind it on the
/// reader's loop pauses it here (`PublisherRegistry`); a reader's `pub`s are published through
/// a stand-in for its publisher, so one lagging here pauses it there (`RemotePublishers`).
///
/// Thread rules: the owner's loop; `inbox` is posted to from any thread. Lifetime rule: the
/// owner's server holds it; it holds its feeds, and each reader's outbox, until the reader
/// closes the feed or the subject ends.
package final class ReplicaSource: @unchecked Sendable {
    /// Where readers' requests come in.
    let inbox: LoopInbox<ReplicaRequest>
    private let loop: LoopScheduler
    /// The server whose subjects these are, which carries out the readers' requests; set
    /// before the loop runs.
    weak var owner: (any ReplicaOwner)?
    private var feeds: [UInt64: ReplicaFeed] = [:]
    private var lastFeed: UInt64 = 0
    /// The link to each reader: its outbox, its publishers as this loop's lagging subscribers
    /// hold them, and how far behind it is.
    private var readers: [ObjectIdentifier: ReaderLink] = [:]
    /// What a reader's backlog is held to (`ReaderLink`), as configured now.
    let limits: ReplicaLimits
    /// The server's publishers (`pauses.current` as a value is fanned out), numbered for the
    /// readers' lagging subscribers.
    private let pauses: PublisherPauses
    private let registry = PublisherRegistry()
    /// The readers' pattern subscriptions, for `$sys.occupancy`.
    private let readersPatterns = RemotePatternReach()
    /// The patterns each reader watches (`ReplicaRequest.watch`), by reader.
    private var watches: [ObjectIdentifier: (reader: ReplicaReader, patterns: [String: SubjectPattern])] = [:]

    init(loop: LoopScheduler, pauses: PublisherPauses, config: ServerConfig) {
        let reference = LoopBoundReference<ReplicaSource>(loop: loop)
        inbox = LoopInbox(loop: loop) { batch in reference.object?.receive(batch) }
        self.loop = loop
        self.pauses = pauses
        limits = ReplicaLimits(config)
        reference.object = self
    }

    private func receive(_ requests: [ReplicaRequest]) {
        guard let owner else { return }
        for request in requests {
            switch request {
            case .open(let name, let reader): open(name, for: reader, in: owner)
            case .watch(let pattern, let holding, let ticket, let reader):
                watch(SubjectPattern(pattern), holding: Set(holding), for: reader, in: owner)
                self.reader(reader).outbox.post(.answered(ticket: ticket, .done, atOnce: true))
            case .unwatch(let pattern, let reader):
                guard watches[ObjectIdentifier(reader)]?.patterns.removeValue(forKey: pattern) != nil else { continue }
                owner.occupancyPattern(pattern, isWatched: false)
            case .count(let feed, let readers):
                guard let feed = feeds[feed] else { continue }
                feed.count(readers)
                owner.replicaCountsChanged(feed.subjectName)
            case .patternReach(let id, let began?, let reader):
                readersPatterns.began(id, of: reader, reading: began)
                owner.replicaPatternChanged(began.pattern)
            case .patternReach(let id, nil, let reader):
                guard let pattern = readersPatterns.ended(id, of: reader) else { continue }
                owner.replicaPatternChanged(pattern)
            case .close(let feed):
                guard let feed = feeds.removeValue(forKey: feed) else { continue }
                feed.close()
                owner.replicaCountsChanged(feed.subjectName)
            case .hold(let publisher, let hold, let began): registry.hold(publisher, hold, began: began)
            case .caughtUp(let reader): self.reader(reader).caughtUp()
            case .join(let reader): _ = self.reader(reader)
            case .release(let turns):
                // Another loop's clients' go back to it; the rest are freed here as the batch
                // goes (their entry let them go at the turn's end).
                for turn in turns {
                    if let maker = turn.maker { self.reader(maker).outbox.post(.release(turn)) }
                }
            case .interest(let change, let reader):
                guard let shared = owner.shared else { continue }
                let link = self.reader(reader)
                let made = link.interests.apply(change, to: shared.readers) { [outbox = link.outbox] number, count in
                    outbox.post(.missedBy(subscription: number, count: count))
                }
                if made { shared.awaitNewInterest() }
            case .forward(let forwarded, let ticket, let reader):
                let link = self.reader(reader)
                Self.answer({ owner.answer(forwarded, publishers: link.publishers, then: $0) }) {
                    link.outbox.post(.answered(ticket: ticket, $0, atOnce: $1))
                }
            case .publishValues(let values, let ticket, let reader):
                let link = self.reader(reader)
                Self.answer({ owner.publish(values, publishers: link.publishers, then: $0) }) {
                    link.outbox.post(.publishedValues(ticket: ticket, $0, atOnce: $1))
                }
            case .publish(let batch, let publisher, let ticket, let reader):
                let link = self.reader(reader)
                owner.publish(batch, by: link.publishers.gate(publisher)) {
                    link.outbox.post(.published(ticket: ticket, $0))
                }
            }
        }
    }

    /// Runs `ask` and hands `post` its answer, with whether it came before `ask` returned (at
    /// once: not after a write, `ReplicaUpdate.answered`).
    private static func answer<Answer>(
        _ ask: (@escaping (Answer) -> Void) -> Void, then post: @escaping (Answer, _ atOnce: Bool) -> Void
    ) {
        var asking = true
        ask { post($0, asking) }
        asking = false
    }

    /// How many of the other loops' pattern subscriptions a value of `name` would reach.
    func patternReach(of name: String) -> Int { readersPatterns.reach(of: name) }

    private func open(_ name: String, for reader: ReplicaReader, in owner: any ReplicaOwner) {
        do throws(ProtocolError) {
            feed(try owner.subjectToReplicate(name), to: reader)
        } catch {
            self.reader(reader).outbox.post(.refused(name: name, error))
        }
    }

    /// Sends `reader` a replica of each subject `pattern` matches but those it holds, and from
    /// now on of each made that it matches (`subjectMade`).
    private func watch(
        _ pattern: SubjectPattern, holding: Set<String>, for reader: ReplicaReader, in owner: any ReplicaOwner
    ) {
        let key = ObjectIdentifier(reader)
        guard watches[key]?.patterns[pattern.text] == nil else { return }
        // Occupancy subjects exist while read: those the pattern reads are made first.
        owner.occupancyPattern(pattern.text, isWatched: true)
        watches[key, default: (reader: reader, patterns: [:])].patterns[pattern.text] = pattern
        for entry in owner.subjects.list(prefix: "") where SystemSubjects.reaches(pattern, entry.name) {
            if !holding.contains(entry.name) { feed(entry, to: reader) }
        }
    }

    /// A subject was made here (`MemorySubjectStore.adopted`): each reader watching a pattern
    /// it matches gets a replica of it.
    func subjectMade(_ entry: SubjectEntry) {
        guard !watches.isEmpty else { return }
        for (reader, patterns) in watches.values
        where patterns.values.contains(where: { SystemSubjects.reaches($0, entry.name) }) {
            feed(entry, to: reader)
        }
    }

    /// A new feed of `entry` to `reader`, opening its replica there. Until the reader tells
    /// how many subscriptions read the replica, the owner counts those its pattern
    /// subscriptions will have there (`RemotePatternReach`): a `pub` that makes a subject, or
    /// the first values of one a pattern brought, counts them among its receivers as the
    /// owner's own pattern subscriptions are.
    private func feed(_ entry: SubjectEntry, to reader: ReplicaReader) {
        lastFeed += 1
        let feed = ReplicaFeed(
            number: lastFeed, entry: entry, link: self.reader(reader), publishers: registry, pauses: pauses
        ) { [weak self] number in
            self?.feeds[number] = nil
        }
        feeds[feed.number] = feed
        feed.start()
        let reach = readersPatterns.reach(of: entry.name, by: reader)
        if reach > 0 { feed.count(ReplicaReaders(subscribers: reach)) }
    }

    /// The link to `reader`'s loop, made on its first request; it is told at once when the
    /// owner's cluster link is down.
    private func reader(_ reader: ReplicaReader) -> ReaderLink {
        let key = ObjectIdentifier(reader)
        if let known = readers[key] { return known }
        let link = ReaderLink(to: reader, loop: loop, pauses: pauses, limits: limits)
        readers[key] = link
        if owner?.shared?.isLinked == false { link.outbox.post(.linked(up: false)) }
        return link
    }

    /// The owner's link to its cluster went down or came back: every reader is told.
    func linkChanged(up: Bool) {
        for link in readers.values { link.outbox.post(.linked(up: up)) }
    }
}

/// The server whose subjects other loops replicate, as its `ReplicaSource` asks it to carry
/// out their requests. Thread rules: its loop.
protocol ReplicaOwner: AnyObject {
    /// The subject a `sub` of `name` would use here (`SessionContext.subjectForUse`).
    func subjectToReplicate(_ name: String) throws(ProtocolError) -> SubjectEntry
    /// The subjects here.
    var subjects: any SubjectStore { get }
    /// The cluster they are shared with; nil standalone.
    var shared: (any SharedSubjects)? { get }
    /// Another loop watches the pattern `pattern` (`isWatched`), or no longer does: for a
    /// pattern of occupancy subjects, those it reads are made and kept as for a subscription
    /// here (`OccupancyTracker.patternBegan`).
    func occupancyPattern(_ pattern: String, isWatched: Bool)
    /// Another loop's counts of the subject `name`'s subscriptions changed
    /// (`SubjectEntry.replicaSubscribers`): what reads them is told.
    func replicaCountsChanged(_ name: String)
    /// Another loop's pattern subscription to `pattern` began or ended (`patternReach`): what
    /// reads the counts of the subjects it matches is told.
    func replicaPatternChanged(_ pattern: SubjectPattern)
    /// Carries out another loop's session's request here and hands `then` what its reply says;
    /// a keyed `pub` publishes through its publisher's stand-in among `publishers`.
    func answer(
        _ request: ForwardedRequest, publishers: RemotePublishers, then: @escaping (SessionReply.Outcome) -> Void)
    /// Publishes another loop's session's `pub`s here, through their publisher's stand-in
    /// among `publishers`, and hands `then` what became of them.
    func publish(
        _ values: ForwardedPublish, publishers: RemotePublishers,
        then: @escaping (ForwardedPublish.Receipt) -> Void)
    /// Publishes another loop's HTTP request's values here, through `publisher`, the stand-in
    /// for the request (`Server.publish(_:by:then:)`).
    func publish(
        _ batch: PublishedBatch, by publisher: PublisherGate, then: @escaping (PublishedBatch.Receipt) -> Void)
}

/// One replica's feed: a subscriber of the owner's subject that hands what the subject sends
/// to the reader's outbox, the values it replays as it subscribes gathered into the snapshot
/// that opens the replica. It stands for the reader's subscriptions in the subject's count of
/// subscribers (`SubjectEntry.replicaSubscribers`), with the count the reader last told.
///
/// Thread rules: the owner's loop (`@unchecked Sendable` for the subject's subscriber list).
/// Lifetime rule: the subject's subscriber list and the source hold it until it is closed or
/// the subject ends.
private final class ReplicaFeed: Subscriber, CatchUpSettling, @unchecked Sendable {
    let number: UInt64
    private let entry: SubjectEntry
    private let link: ReaderLink
    private var outbox: LoopOutbox<ReplicaUpdate> { link.outbox }
    /// Whose value is being fanned out now (`pauses.current`), and the number readers know
    /// them by: read directly, not through a closure over the source, which loads a weak
    /// reference and takes slow reference counts for every value.
    private let publishers: PublisherRegistry
    private let pauses: PublisherPauses
    private let ended: (UInt64) -> Void
    /// While subscribing: what the subject replays, and how it stands.
    private var snapshot: ReplicaSnapshot?
    /// Whether it is subscribing (`snapshot` is set): a flag, since looking at the optional
    /// snapshot copied it, once a value.
    private var isOpening = false
    private var subscription: Disposable?
    /// The subject's own `slow_consumer`, as the reader was last told.
    private var policy: SlowConsumerPolicy?
    /// The reader's subscriptions to the subject, as last told.
    private var told = ReplicaReaders()
    /// Values the reader missed since the last it was sent (`ReaderLink.admits`).
    private var missed: UInt64 = 0
    /// Under `conflate`, the latest of them, which the reader's subscribers are owed: sent
    /// once the reader has caught up, unless a later value is sent first (`settle`); with the
    /// turn's values it is in, held here (the reference does not hold them).
    private var latest: (value: ReplicatedValueRef, holding: ReplicatedValues)?
    private var isOver = false

    init(
        number: UInt64, entry: SubjectEntry, link: ReaderLink, publishers: PublisherRegistry, pauses: PublisherPauses,
        ended: @escaping (UInt64) -> Void
    ) {
        self.number = number
        self.entry = entry
        self.link = link
        self.publishers = publishers
        self.pauses = pauses
        self.ended = ended
    }

    /// Subscribes to the subject and opens the replica with what it replayed (a map replays
    /// nothing: its keys and kept changes are read from it).
    func start() {
        snapshot = ReplicaSnapshot(
            feed: number, name: entry.name, epoch: entry.epoch, kind: entry.kind, capacity: entry.capacity,
            retainMilliseconds: entry.retainMilliseconds, isDurable: entry.isDurable,
            slowConsumer: entry.label.slowConsumer, lastSeq: entry.lastSeq,
            droppedNewest: entry.dropped.newest,
            map: entry.map.map { map in
                ReplicaMapState(
                    ttlMilliseconds: map.ttlMilliseconds, maxKeys: map.maxKeys,
                    keys: map.snapshot.map { ReplicatedValue($0) },
                    changes: map.changes(after: 0).map { ReplicatedValue($0) },
                    resumesAfter: map.resumesAfter)
            })
        policy = entry.label.slowConsumer
        entry.replicaSubscribers.feeds += 1
        isOpening = true
        let subscription = entry.subject.subscribe(self)
        isOpening = false
        let opened = snapshot!
        snapshot = nil
        outbox.post(.opened(opened))
        if isOver {
            subscription.dispose()
        } else {
            self.subscription = subscription
        }
    }

    var subjectName: String { entry.name }

    func count(_ readers: ReplicaReaders) {
        guard !isOver else { return }
        entry.replicaSubscribers.told += readers.subscribers - told.subscribers
        entry.replicaSubscribers.named += readers.named - told.named
        told = readers
    }

    /// The reader let the replica go.
    func close() {
        guard !isOver else { return }
        finish()
        subscription?.dispose()
    }

    func sendNext(_ message: Message) {
        if _slowPath(isOpening) {
            let value = ReplicatedValue(message)
            snapshot!.values.append(value)
            snapshot!.lastSeq = value.seq
            return
        }
        let subjectPolicy = entry.label.slowConsumer
        if _slowPath(subjectPolicy != policy) {
            policy = subjectPolicy
            outbox.post(.policy(feed: number, subjectPolicy))
        }
        let value = entry.replicated(
            message, pauses: pauses, publishers: publishers, loop: Unmanaged.passUnretained(link.outbox.loop))
        // A loop whose subscribers all conflate is one conflating subscriber.
        let judgedBy: SlowConsumerPolicy? = told.allConflate ? .conflate : message.label.slowConsumer
        guard link.admits(weight: value.weight, policy: judgedBy) else {
            missed &+= 1
            if link.policy(of: judgedBy) == .conflate { latest = (value, value.values) }
            link.settleWhenCaughtUp(self)
            return
        }
        if _slowPath(missed > 0) {
            outbox.post(.missed(feed: number, count: missed))
            missed = 0
            latest = nil
        }
        link.post(value, of: number)
    }

    /// The reader has caught up: it is told of the values it missed since the last it was sent,
    /// and under `conflate` gets the latest of them.
    func settle() {
        guard !isOver, missed > 0 else { return }
        if let latest {
            if missed > 1 { outbox.post(.missed(feed: number, count: missed - 1)) }
            link.post(latest.value, of: number)
        } else {
            outbox.post(.missed(feed: number, count: missed))
        }
        missed = 0
        latest = nil
    }

    func sendError(_ error: any Error) {
        end(.failed(error as? ProtocolError ?? ProtocolError(.subjectError, "\(error)")))
    }

    func sendCompleted() { end(entry.isDeleted ? .deleted : .completed) }

    func didSubscribe(with disposable: CompoundDisposable) {}

    private func end(_ how: ReplicaEnd) {
        guard !isOver else { return }
        finish()
        ended(number)
        if isOpening {
            snapshot!.end = how
        } else {
            outbox.post(.ended(feed: number, how))
        }
    }

    /// Takes the feed out of the subject's count of subscribers, once.
    private func finish() {
        isOver = true
        entry.replicaSubscribers.feeds -= 1
        entry.replicaSubscribers.told -= told.subscribers
        entry.replicaSubscribers.named -= told.named
        told = ReplicaReaders()
    }
}
