import Runnel
import RunnelJSON
import RunnelProtocol

/// One named subject: the library subject that carries its values, and the server's
/// bookkeeping about it (its position, its subscriptions). Loop thread only.
package final class SubjectEntry {
    /// The name, and the epoch the subject's positions are counted in.
    let label: SubjectLabel
    let kind: SubjectKind
    /// Replay subjects only.
    let capacity: Int?
    /// Replay subjects: how long a value is kept (`retain_s`, milliseconds), under `capacity`
    /// too; nil: kept until newer ones push it out. Maps: how long a key lives unwritten
    /// (`ttl_s`).
    let retainMilliseconds: Int64?
    /// The time of the newest value let go (by capacity, bytes or age) or never held here.
    let dropped: DroppedValueTimes
    /// The subject's id in the durable journal; nil for a subject kept in memory only.
    let durableID: Int64?
    /// A map's keys (`SubjectEntry+Map`); nil for other kinds. `subject` carries its changes.
    package let map: MapValues?
    let subject: Subject<Message>
    /// The seq of the latest value subscribers got and the subject retains: 0 before any (a
    /// behavior's initial value has seq 0).
    private(set) var lastSeq: UInt64
    /// The seq of the latest value published: ahead of `lastSeq` while values wait for the
    /// disk (`fsync = always`).
    private var assignedSeq: UInt64
    /// Values accepted by `pub` since the server started.
    var published: UInt64 = 0
    /// What the layer the subjects are shared through keeps for this subject's values
    /// (`SubjectStore.sharing`; a clustered node's route to the other nodes and how many it
    /// sent them), made at its first value and gone with the entry, so `pub` reaches it without
    /// a lookup. Nil on a standalone node. Loop thread only, as the entry.
    var sharingState: AnyObject?
    /// Set when the store lets go of the subject (`delete`): whoever still holds the entry
    /// must look its name up again.
    package var isDeleted = false
    /// Set when a `complete`, `error` or `delete` was accepted, before the subject's
    /// subscribers see it (it may wait for the disk), or when the subject is restored already
    /// terminated: no value is accepted after it. Every termination goes through the store,
    /// which sets it first, so `pub` checks this flag instead of asking the subject (which
    /// takes the subject's lock).
    var isEnding = false
    /// Subscriptions that name this subject (pattern subscriptions are not counted).
    var namedSubscriptions = 0
    /// Those of them made with `"conflate": true`.
    var conflatingSubscriptions = 0
    /// The stage chains its subscriptions share, by their stages' key (`SharedStageChain`).
    var sharedChains: [SharedStageChain.Key: SharedStageChain] = [:]
    /// A map's subscriptions that follow one key each, once it has one (`MapKeyRouter`).
    var keyRouter: MapKeyRouter?
    /// On the owner's loop: the other loops' replicas of the subject (`ReplicaSource`), each
    /// one subscriber of `subject`, and the subscriptions they told they have there: `told`,
    /// every subscriber (`pub`'s receivers), and `named`, those naming it (`list`'s, and with
    /// the other loops' pattern subscriptions, `$sys.occupancy`'s).
    var replicaSubscribers = (feeds: 0, told: 0, named: 0)
    /// On the owner's loop: the values its feeds hand other loops this turn (`replicated`).
    var replication = SubjectReplication()
    /// On another loop, for a replica of the subject (`SubjectReplicas`): the owner's number
    /// for the feed of updates it is made from; nil for a subject of the loop's own.
    var replicaFeed: UInt64?
    /// While the store holds the entry and the subject keeps values (replay and behavior
    /// subjects): the subject as the replay subject it is, cast once, and the store's
    /// retained-bytes ledger its values are counted in.
    private var retention: (subject: ReplaySubject<Message>, ledger: RetainedValues)?
    /// The bytes of the values the subject keeps now, as counted in the ledger.
    private(set) var retainedBytes = 0

    /// Whether its values outlive the process: kept in the durable journal (`durableID`), or,
    /// in a cluster, in JetStream's files.
    let isDurable: Bool

    package var name: String { label.name }
    var epoch: String { label.epoch! }

    /// A new subject, in `epoch` (a new one unless a cluster's definition names it); a replay
    /// subject keeps at most `maxReplayBytes` of values, and none older than
    /// `retainMilliseconds`. `durable: true` without a `durableID`: kept by a cluster. A
    /// behavior's initial value is stamped `created` (Unix ms).
    /// A map keeps at most `maxKeys` keys, each for `retainMilliseconds` unwritten
    /// (`ttl_s`) when given.
    convenience init(
        name: String, kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64? = nil, initial: RawJSON?,
        created: Int64 = 0, maxReplayBytes: Int, maxKeys: Int? = nil, durableID: Int64? = nil,
        epoch: String = Epoch.make(), durable: Bool = false
    ) {
        let label = SubjectLabel(name, epoch: epoch)
        let dropped = DroppedValueTimes()
        let subject = Self.librarySubject(
            of: kind, label: label, capacity: capacity ?? 0, initial: initial, created: created,
            maxReplayBytes: maxReplayBytes, dropped: dropped)
        self.init(
            label: label, kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, durableID: durableID,
            subject: subject, dropped: dropped, lastSeq: 0, durable: durable,
            map: kind == .map ? MapValues(ttlMilliseconds: retainMilliseconds, maxKeys: maxKeys ?? 1) : nil)
    }

    /// The library subject behind `label`'s subject of `kind`, confined to its loop as every
    /// subject of the daemon is: holding `values` (oldest first), a behavior's current value the
    /// newest of them or, with none, `initial` (null when not given) stamped `created`; ended by
    /// `terminal` when given. A replay subject keeps the last `capacity` within
    /// `maxReplayBytes`, and `dropped` hears of the values let go.
    static func librarySubject(
        of kind: SubjectKind, label: SubjectLabel, capacity: Int, retaining values: [Message] = [],
        initial: RawJSON? = nil, created: Int64 = 0, terminal: Event<Message>? = nil, maxReplayBytes: Int,
        dropped: DroppedValueTimes
    ) -> Subject<Message> {
        switch kind {
        case .subject, .map:
            let subject = Subject<Message>(threading: .confined)
            terminal?.send(to: subject)
            return subject
        case .replay:
            return ReplaySubject(
                capacity: capacity, retaining: values, terminal: terminal, maxWeight: maxReplayBytes,
                weight: RetainedValues.weight, dropped: dropped.note, threading: .confined)
        case .behavior:
            return BehaviorSubject(
                values.last
                    ?? Message(label: label, raw: initial ?? .null, members: JSONMemberIndex(), seq: 0, time: created),
                terminal: terminal, weight: RetainedValues.weight, dropped: dropped.note,
                threading: .confined)
        }
    }

    /// A subject as it was left: `subject` holds the retained values (the newest with seq
    /// `lastSeq`) and any terminal event, counted in `label`'s epoch, and tells `dropped` of
    /// the values it lets go.
    init(
        label: SubjectLabel, kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64? = nil, durableID: Int64?,
        subject: Subject<Message>, dropped: DroppedValueTimes, lastSeq: UInt64, durable: Bool = false,
        map: MapValues? = nil
    ) {
        precondition(label.epoch != nil, "a subject's label carries its epoch")
        precondition((kind == .map) == (map != nil), "a map, and only a map, has keys")
        self.map = map
        self.label = label
        self.isDurable = durable || durableID != nil
        self.kind = kind
        self.capacity = kind == .replay ? capacity : nil
        self.retainMilliseconds = kind == .replay ? retainMilliseconds : map?.ttlMilliseconds
        self.dropped = dropped
        self.durableID = durableID
        self.subject = subject
        self.lastSeq = lastSeq
        self.assignedSeq = lastSeq
        isEnding = subject.isTerminated
    }

    /// The subscriptions a value published now reaches, before their stages: `pub`'s
    /// `receivers`.
    package var subscriberCount: Int {
        let count = subject.subscriberCount - replicaSubscribers.feeds + replicaSubscribers.told
        guard let keyRouter else { return count }
        return max(0, count - 1) + keyRouter.followers
    }

    /// Whether `pub` may send to it.
    var acceptsValues: Bool {
        assert(isEnding || !subject.isTerminated, "the subject terminated without the store setting isEnding")
        return !isEnding
    }

    var isTerminated: Bool { subject.isTerminated }

    /// Whether the subject has ended and `position` is its last value's: a subscription
    /// resuming there would get nothing but the terminal event (SSE answers it `204`).
    func hasEnded(at position: Position) -> Bool { isTerminated && position == self.position }

    /// The position of the latest value (`EPOCH:0` before any).
    var position: Position { Position(epoch: epoch, seq: lastSeq) }

    /// The seq of a newly published value.
    func nextSeq() -> UInt64 {
        assignedSeq += 1
        return assignedSeq
    }

    /// Moves the position to `seq`, with nothing delivered (`recordRemoval`).
    func advance(to seq: UInt64) {
        lastSeq = max(lastSeq, seq)
        assignedSeq = max(assignedSeq, seq)
    }

    /// Sends `message`, the value with seq `message.seq`, to the subject's subscribers.
    func deliver(_ message: Message) {
        lastSeq = message.seq!
        subject.sendNext(message)
        if let retention { recountRetained(retention) }
    }

    /// Whether the subject keeps values for late subscribers, which `max_retained_bytes` bounds.
    var retainsValues: Bool { kind != .subject }

    /// Starts counting the subject's retained values in `ledger` (the store took the entry in),
    /// and ageing them there when it keeps them for a time only.
    func countRetained(in ledger: RetainedValues) {
        if let map { return countKeys(of: map, in: ledger) }
        guard retainsValues, let replay = subject as? ReplaySubject<Message> else { return }
        let retention = (subject: replay, ledger: ledger)
        self.retention = retention
        recountRetained(retention)
        if retainMilliseconds != nil { ledger.age(self) }
    }

    /// Stops counting them (the store let the entry go).
    func stopCountingRetained() {
        if let map { return stopCountingKeys(of: map) }
        retention?.ledger.add(-retainedBytes)
        if retainMilliseconds != nil { retention?.ledger.stopAgeing(self) }
        retention = nil
        retainedBytes = 0
    }

    /// Lets go of the values older than `retain_s` at `now` (Unix ms).
    func dropExpired(now: Int64) {
        if let map { return expireKeys(of: map, now: now) }
        guard let retainMilliseconds, let retention else { return }
        let oldestKept = now - retainMilliseconds
        if retention.subject.dropReplayed(while: { $0.time < oldestKept }) > 0 { recountRetained(retention) }
    }

    /// Whether every value published at or after `time` (Unix ms) is still retained: what a
    /// `since` subscription's reply says as `resumed`.
    func retainsEverything(since time: Int64) -> Bool { dropped.newest.map { $0 < time } ?? true }

    private func recountRetained(_ retention: (subject: ReplaySubject<Message>, ledger: RetainedValues)) {
        let now = retention.subject.retainedWeight
        retention.ledger.add(now - retainedBytes)
        retainedBytes = now
    }

    /// Whether a subscription can start right after `position` and be delivered exactly the
    /// values after it: the same epoch, not beyond the latest value, and every value after it
    /// still retained (for a plain subject: none was published after it).
    func canResume(after position: Position) -> Bool {
        guard position.epoch == epoch, position.seq <= lastSeq else { return false }
        if position.seq == lastSeq { return true }
        if let map { return position.seq >= map.resumesAfter }
        guard let replay = subject as? ReplaySubject<Message>, let oldest = replay.oldestReplayedValue?.seq else {
            return false
        }
        return oldest <= position.seq + 1
    }
}

extension SubjectEntry {
    /// What the subject was created as, for `kind_mismatch` messages: "replay (capacity 5,
    /// durable)".
    var shape: String {
        kind.shape(
            capacity: capacity, retainMilliseconds: retainMilliseconds, maxKeys: map?.maxKeys, durable: isDurable)
    }
}

/// The time of the newest value a subject no longer retains: let go to make room, for its
/// age, or never held by this process (a journal or a cluster's stream kept only later ones).
/// A `since` earlier than it cannot be replayed whole.
///
/// Thread rules: loop thread only; the subject tells it under its lock, on the loop thread
/// that sends it values. Lifetime rule: held by the entry and by its subject's closure.
final class DroppedValueTimes: @unchecked Sendable {
    /// nil while every value the subject had is retained.
    private(set) var newest: Int64?

    /// `message` is no longer retained.
    @Sendable func note(_ message: Message) { noteTime(message.time) }

    /// A value published at `time` is no longer retained (or was never held).
    func noteTime(_ time: Int64) {
        if time > newest ?? .min { newest = time }
    }
}
