import RunnelProtocol
import RunnelUV
import Synchronization

/// How far a loop holding replicas is behind their owner (decision 0011): the bytes of values
/// the owner has handed it (`ReplicatedValue.weight`) that it has not delivered yet, counted up
/// by the owner once a turn and down by the reader once a batch. The owner paces the
/// publishers of a loop behind by more than the crossing window, treats one behind by more
/// than the soft limit as a lagging subscriber (`ReaderLink`), and asks to hear when it has
/// caught up (`awaitCatchUp`); the reader tells it once (`delivered` returns true).
///
/// Thread rules: any thread; the owner's loop adds and waits, the reader's subtracts. Lifetime
/// rule: the reader's `ReplicaReader` holds it, and so does the owner's link to that reader.
final class ReplicaBacklog: Sendable {
    private let bytes = Atomic<Int>(0)
    /// The backlog the owner waits for the reader to fall to; -1 while it waits for nothing.
    private let catchUpMark = Atomic<Int>(-1)

    /// The bytes handed to the reader and not yet delivered there.
    var current: Int { bytes.load(ordering: .relaxed) }

    /// The owner handed the reader values weighing `weight` in all. The owner's loop.
    func handed(_ weight: Int) { bytes.add(weight, ordering: .relaxed) }

    /// The reader delivered values weighing `weight` in all; returns true when the owner must
    /// be told it has caught up (it waited for it, and now it has). The reader's loop.
    func delivered(_ weight: Int) -> Bool {
        let left = bytes.subtract(weight, ordering: .sequentiallyConsistent).newValue
        let mark = catchUpMark.load(ordering: .sequentiallyConsistent)
        guard mark >= 0, left <= mark else { return false }
        return catchUpMark.compareExchange(expected: mark, desired: -1, ordering: .sequentiallyConsistent).exchanged
    }

    /// The owner waits for the backlog to fall to `mark`: returns true when it has already
    /// (the owner goes on at once), else the reader says when it does (`delivered`). Whichever
    /// side sees the fall first acts on it, and only that one. The owner's loop.
    func awaitCatchUp(to mark: Int) -> Bool {
        catchUpMark.store(mark, ordering: .sequentiallyConsistent)
        guard bytes.load(ordering: .sequentiallyConsistent) <= mark else { return false }
        return catchUpMark.compareExchange(expected: mark, desired: -1, ordering: .sequentiallyConsistent).exchanged
    }
}

/// The owner's way to one loop holding replicas of its subjects: the outbox its updates go
/// through, its publishers' stand-ins (`RemotePublishers`), and flow control.
///
/// - Pace: once what the loop has to take, with this turn's values, passes the crossing window
///   (`ReplicaLimits.pace`), the value's publisher is paced under `backpressure` and
///   `disconnect` (`PublisherGate.paceBegan`: held, not counted as a pause) until the loop has
///   caught up to half the window, as `SessionSettings.crossingWindow` holds a publisher on a
///   reading loop. A publisher runs only that far ahead of the loops delivering its values,
///   whose working set then stays in the caches.
/// - Lag: once the values handed to it in earlier turns and not yet delivered there
///   (`ReplicaBacklog`) pass the soft limit (a turn's own values are not behind: they go as one
///   batch, however many, as a burst a publisher sent in one read does on one loop), a value
///   applies its subject's policy to the whole loop (`conflate` when every subscriber there
///   conflates: `ReplicaReaders`), as one lagging subscriber there would. Under `drop` that
///   loop misses the value (the feed tells it how many before the next, or once the loop has
///   caught up if none comes first: `ReplicaUpdate.missed`, `settleWhenCaughtUp`); under
///   `backpressure` and `disconnect` the publisher whose value it is is held
///   (`PublisherGate.laggardBegan`) until the loop has caught up (to half the window), as one
///   connection that still reads holds its publishers while it drains, and what waits for the
///   loop is bounded by the pause. A value with no publisher to hold (from the cluster, a
///   timer) under `disconnect`, and any under `conflate`, which never pauses a publisher, goes
///   up to the hard limit; past it the loop misses the value, so what waits for it stays
///   bounded (a loop is never closed: its subscribers are judged by their own output).
///   Under `conflate` the latest value missed is kept, and sent once the loop has caught up.
///
/// Thread rules: the owner's loop. Lifetime rule: its `ReplicaSource` holds it for as long as
/// the reader is known; it holds the publishers it paused until the reader has caught up.
final class ReaderLink {
    let outbox: LoopOutbox<ReplicaUpdate>
    let publishers: RemotePublishers
    /// Its subscriptions as the owner's cluster holds them.
    let interests = RemoteInterests()
    private let backlog: ReplicaBacklog
    private let pauses: PublisherPauses
    private let limits: ReplicaLimits
    /// What this turn's batch carries besides its updates.
    private let turn = Turn()
    /// The run of one feed's values the batch ends with, by their places in one turn's values
    /// of its subject (`ReplicaUpdate.values`).
    private let values: OutboxRun<ReplicaUpdate, ReplicatedValues, Int>
    /// The publishers held until the reader catches up, each once for each kind of hold.
    private var held: [(gate: PublisherGate, hold: PublisherHold)] = []
    /// The feeds whose reader missed values it has not been told of, settled once it has
    /// caught up, however few values follow (`CatchUpSettling`).
    private var owing: [any CatchUpSettling] = []

    private final class Turn {
        /// The weight of the values posted this turn, handed over with the turn's batch.
        var weight = 0
        /// The reader is to say when it catches up, asked once the batch is handed over (the
        /// backlog then has the turn's values).
        var awaitsCatchUp = false
        weak var link: ReaderLink?
    }

    /// The link to `reader` from the owner on `loop`, whose publishers are `pauses`'.
    init(to reader: ReplicaReader, loop: LoopScheduler, pauses: PublisherPauses, limits: ReplicaLimits) {
        backlog = reader.backlog
        self.pauses = pauses
        self.limits = limits
        let outbox = LoopOutbox<ReplicaUpdate>(loop: loop) { [turn, backlog] batch in
            backlog.handed(turn.weight)
            turn.weight = 0
            reader.inbox.post(contentsOf: batch)
            guard turn.awaitsCatchUp else { return }
            turn.awaitsCatchUp = false
            turn.link?.awaitCatchUp()
        }
        self.outbox = outbox
        values = OutboxRun(of: outbox) { feed, values, places in
            // Closed into the batch: the reader may read them once it goes.
            values.seal()
            return .values(feed: feed, values, places)
        }
        publishers = RemotePublishers(pauses: pauses, maker: reader) { publisher, hold, began in
            outbox.post(.hold(publisher: publisher, hold, began: began))
        }
        turn.link = self
    }

    /// Whether a value weighing `weight` goes to the reader: false when the reader misses it;
    /// true, pacing the publisher whose value it is when the policy (`policy`, else the
    /// server's) is `backpressure` or `disconnect` and the reader is a window behind, and
    /// holding it when the reader is behind by the soft limit.
    @inline(__always)
    func admits(weight: Int, policy: SlowConsumerPolicy?) -> Bool {
        let behind = backlog.current &+ turn.weight &+ weight
        guard _slowPath(behind > limits.pace) else { return true }
        return admitsPastWindow(behind: behind, policy: self.policy(of: policy))
    }

    /// The loop is a window behind. Under `backpressure` and `disconnect` the value's
    /// publisher is paced; `drop` and `conflate` never slow a publisher for a loop, which
    /// misses values past the soft limit instead.
    private func admitsPastWindow(behind: Int, policy: SlowConsumerPolicy) -> Bool {
        switch policy {
        case .backpressure, .disconnect:
            if let publisher = pauses.currentGate { hold(publisher, .pace) }
        case .drop, .conflate: break
        }
        guard behind > limits.soft else { return true }
        return admitsPastSoftLimit(policy: policy)
    }

    /// With this turn's values, the loop has more than the soft limit to take. Under
    /// `backpressure` and `disconnect` the value's publisher is held at once (pacing a burst
    /// early misses nothing); past that, only what earlier turns handed over is behind.
    private func admitsPastSoftLimit(policy: SlowConsumerPolicy) -> Bool {
        switch policy {
        case .backpressure:
            if let publisher = pauses.currentGate { hold(publisher, .laggard) }
            return true
        case .disconnect:
            if let publisher = pauses.currentGate {
                hold(publisher, .laggard)
                return true
            }
            return backlog.current <= limits.hard
        case .drop: return backlog.current <= limits.soft
        case .conflate: return backlog.current <= limits.hard
        }
    }

    /// Posts a value of the feed numbered `feed` for the reader (its weight handed over with the
    /// turn's batch): with the run of the feed's values the batch ends with, when it does, so a
    /// run of them crosses as one update.
    @inline(__always)
    func post(_ value: ReplicatedValueRef, of feed: UInt64) {
        turn.weight &+= value.weight
        if values.isOpen(feed, with: { value.isOne(of: $0) }) {
            values.append(value.index)
        } else {
            values.start(feed, value.values, with: value.index)
        }
    }

    /// The server's policy where the subject has none of its own.
    func policy(of own: SlowConsumerPolicy?) -> SlowConsumerPolicy { own ?? limits.policy }

    /// `feed`'s reader missed values: the feed settles with it once the reader has caught up
    /// (a gap no value follows would otherwise go untold). Asked in the next turn, once this
    /// turn's batch is handed over: asked now, a reader with little left would count as caught
    /// up at once, and a burst's values would go past the limit one by one.
    func settleWhenCaughtUp(_ feed: any CatchUpSettling) {
        guard !owing.contains(where: { $0 === feed }) else { return }
        owing.append(feed)
        guard owing.count == 1 else { return }
        let link = LoopBound(self, loop: outbox.loop)
        _ = outbox.loop.schedule { link.value.awaitCatchUp() }
    }

    /// Holds `publisher` (not retained to be looked for: it is side-tabled, so a reference count
    /// takes the slow path, and a flooding publisher is looked for here at every value).
    private func hold(_ publisher: Unmanaged<PublisherGate>, _ hold: PublisherHold) {
        let identity = publisher.toOpaque()
        guard !held.contains(where: { $0.hold == hold && Unmanaged.passUnretained($0.gate).toOpaque() == identity })
        else { return }
        let gate = publisher.takeUnretainedValue()
        held.append((gate, hold))
        gate.take(hold, began: true)
        if held.count == 1 { turn.awaitsCatchUp = true }
    }

    /// Asks the reader to say when it has caught up to half the window, or goes on at once
    /// when it has.
    private func awaitCatchUp() {
        if backlog.awaitCatchUp(to: limits.pace / 2) { caughtUp() }
    }

    /// The reader has caught up (`ReplicaRequest.caughtUp`, or at once): the publishers held
    /// go, and the feeds that owe it a gap settle.
    func caughtUp() {
        let released = held
        held = []
        for (publisher, hold) in released { publisher.take(hold, began: false) }
        let settling = owing
        owing = []
        for feed in settling { feed.settle() }
    }
}

/// The limits a reading loop's backlog is held to (`ReaderLink`): the crossing window
/// (`SessionSettings.crossingLimit`), the server's soft and hard limits on a connection's
/// unsent output (`soft_pending_bytes`, `max_pending_bytes`) and its default policy, as
/// configured now. Thread rules: the owner's loop. Lifetime rule: its
/// `ReplicaSource` holds it, and so does each of its links.
final class ReplicaLimits {
    private(set) var pace: Int
    private(set) var soft: Int
    private(set) var hard: Int
    private(set) var policy: SlowConsumerPolicy

    init(_ config: ServerConfig) { (pace, soft, hard, policy) = Self.limits(of: config) }

    /// Takes the limits `config` sets (a reload).
    func configure(_ config: ServerConfig) { (pace, soft, hard, policy) = Self.limits(of: config) }

    private static func limits(of config: ServerConfig) -> (Int, Int, Int, SlowConsumerPolicy) {
        (
            SessionSettings.crossingLimit(config), config.softPendingLimit, config.maxPendingBytes,
            config.slowConsumer
        )
    }
}

/// A feed that owes its reader the news of values it missed (and, under `conflate`, the
/// latest of them), settled once the reader has caught up (`ReaderLink.settleWhenCaughtUp`).
/// Thread rules: the owner's loop.
protocol CatchUpSettling: AnyObject {
    func settle()
}
