import Runnel
import RunnelProtocol
import RunnelUV

/// The owner loop's side of replicas (decision 0011): other loops ask for replicas of its
/// subjects through `inbox`, one batch a turn. Each replica is a feed, one subscriber of the
/// subject here, whose values join this turn's updates for the reader's loop (`LoopOutbox`):
/// a value crosses to a loop once, whatever its subscribers there, and a loop's updates cross
/// once a turn.
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
    private var outboxes: [ObjectIdentifier: LoopOutbox<ReplicaUpdate>] = [:]

    init(loop: LoopScheduler) {
        let reference = LoopBoundReference<ReplicaSource>(loop: loop)
        inbox = LoopInbox(loop: loop) { batch in reference.object?.receive(batch) }
        self.loop = loop
        reference.object = self
    }

    private func receive(_ requests: [ReplicaRequest]) {
        guard let owner else { return }
        for request in requests {
            switch request {
            case .open(let name, let reader): open(name, for: reader, in: owner)
            case .count(let feed, let subscribers, let named): feeds[feed]?.count(subscribers, named: named)
            case .close(let feed): feeds.removeValue(forKey: feed)?.close()
            case .forward(let forwarded, let ticket, let reader):
                let outbox = self.outbox(of: reader)
                owner.answer(forwarded) { outbox.post(.answered(ticket: ticket, $0)) }
            }
        }
    }

    private func open(_ name: String, for reader: ReplicaReader, in owner: any ReplicaOwner) {
        let outbox = self.outbox(of: reader)
        let entry: SubjectEntry
        do throws(ProtocolError) {
            entry = try owner.subjectToReplicate(name)
        } catch {
            return outbox.post(.refused(name: name, error))
        }
        lastFeed += 1
        let feed = ReplicaFeed(number: lastFeed, entry: entry, outbox: outbox) { [weak self] number in
            self?.feeds[number] = nil
        }
        feeds[feed.number] = feed
        feed.start()
    }

    /// The outbox of `reader`'s loop, made on its first request.
    private func outbox(of reader: ReplicaReader) -> LoopOutbox<ReplicaUpdate> {
        let key = ObjectIdentifier(reader)
        if let outbox = outboxes[key] { return outbox }
        let made = LoopOutbox<ReplicaUpdate>(loop: loop) { batch in reader.inbox.post(contentsOf: batch) }
        outboxes[key] = made
        return made
    }
}

/// The server whose subjects other loops replicate, as its `ReplicaSource` asks it to carry
/// out their requests. Thread rules: its loop.
protocol ReplicaOwner: AnyObject {
    /// The subject a `sub` of `name` would use here (`SessionContext.subjectForUse`).
    func subjectToReplicate(_ name: String) throws(ProtocolError) -> SubjectEntry
    /// Carries out another loop's session's request here and hands `then` what its reply says.
    func answer(_ request: ForwardedRequest, then: @escaping (SessionReply.Outcome) -> Void)
}

/// One replica's feed: a subscriber of the owner's subject that hands what the subject sends
/// to the reader's outbox, the values it replays as it subscribes gathered into the snapshot
/// that opens the replica. It stands for the reader's subscriptions in the subject's count of
/// subscribers (`SubjectEntry.replicaSubscribers`), with the count the reader last told.
///
/// Thread rules: the owner's loop (`@unchecked Sendable` for the subject's subscriber list).
/// Lifetime rule: the subject's subscriber list and the source hold it until it is closed or
/// the subject ends.
private final class ReplicaFeed: Subscriber, @unchecked Sendable {
    let number: UInt64
    private let entry: SubjectEntry
    private let outbox: LoopOutbox<ReplicaUpdate>
    private let ended: (UInt64) -> Void
    /// While subscribing: what the subject replays, and how it stands.
    private var snapshot: ReplicaSnapshot?
    private var subscription: Disposable?
    /// The subject's own `slow_consumer`, as the reader was last told.
    private var policy: SlowConsumerPolicy?
    /// The reader's subscribers, and those naming the subject, as last told.
    private var told = (subscribers: 0, named: 0)
    private var isOver = false

    init(number: UInt64, entry: SubjectEntry, outbox: LoopOutbox<ReplicaUpdate>, ended: @escaping (UInt64) -> Void) {
        self.number = number
        self.entry = entry
        self.outbox = outbox
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
                    keys: map.snapshot.map(ReplicatedValue.init),
                    changes: map.changes(after: 0).map(ReplicatedValue.init),
                    resumesAfter: map.resumesAfter)
            })
        policy = entry.label.slowConsumer
        entry.replicaSubscribers.feeds += 1
        let subscription = entry.subject.subscribe(self)
        let opened = snapshot!
        snapshot = nil
        outbox.post(.opened(opened))
        if isOver {
            subscription.dispose()
        } else {
            self.subscription = subscription
        }
    }

    func count(_ subscribers: Int, named: Int) {
        guard !isOver else { return }
        entry.replicaSubscribers.told += subscribers - told.subscribers
        entry.replicaSubscribers.named += named - told.named
        told = (subscribers, named)
    }

    /// The reader let the replica go.
    func close() {
        guard !isOver else { return }
        finish()
        subscription?.dispose()
    }

    func sendNext(_ message: Message) {
        let value = ReplicatedValue(message)
        if snapshot != nil {
            snapshot!.values.append(value)
            snapshot!.lastSeq = value.seq
        } else {
            if _slowPath(entry.label.slowConsumer != policy) {
                policy = entry.label.slowConsumer
                outbox.post(.policy(feed: number, policy))
            }
            outbox.post(.value(feed: number, value))
        }
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
        if snapshot != nil {
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
        told = (0, 0)
    }
}
