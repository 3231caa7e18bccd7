import RunnelJSON
import RunnelProtocol
import RunnelUV

/// What passes between a subject's owner loop and a loop that holds a replica of it
/// (docs/decisions/0011-every-loop-serves-sessions-from-replicas.md): values only, so that
/// nothing of one loop's (entries, payloads and their caches, labels) is touched by another.
///
/// Thread rules: values, made on one loop and read on the other.

/// A value published to a subject, as its owner hands it to a replica's loop: the published
/// bytes (shared, never changed), where its members sit, its seq and its time; a map's change
/// also names its key, and a removal its reason (`mark`, its value null); `publisher`, the
/// owner's number for whoever published it (`PublisherRegistry`; 0 for nobody), whom a
/// subscriber lagging behind it there pauses. Made on the owner's loop from the message's
/// payload, whose caches stay there, once for all the loops the value goes to, in its turn's
/// `ReplicatedValues`. The replica's loop makes one payload of its own from it for all its
/// subscribers. A value, not an object: an object a value cost two loops its allocation, freed
/// on the other thread (bench/README.md, "A subject's turn of values made once").
struct ReplicatedValue: Sendable {
    let raw: RawJSON
    let members: JSONMemberIndex
    let seq: UInt64
    let time: Int64
    let key: String?
    let mark: Message.Mark?
    let publisher: UInt64

    /// `message`, a value of a subject or a map's change (it has a seq), published by the
    /// publisher numbered `publisher`. The owner's loop.
    init(_ message: borrowing Message, publisher: UInt64 = 0) {
        // A whole value's payload is read where the message holds it, not counted again.
        if message.part.isWhole {
            raw = message.source.raw
            members = message.source.members
        } else {
            let payload = message.value
            raw = payload.raw
            members = payload.members
        }
        seq = message.seq ?? 0
        time = message.time
        key = message.label.key
        mark = message.mark
        self.publisher = publisher
    }

    /// What it weighs in a reader's backlog (`ReplicaBacklog`): its bytes, and 64 for what
    /// carries them.
    var weight: Int { raw.count &+ 64 }

    /// The message a replica of `label`'s subject delivers. The replica's loop.
    func message(in label: SubjectLabel) -> Message {
        withUnsafePointer(to: self) { Self.message(at: $0, in: label) }
    }

    /// `message(in:)` of the value at `value`, made from the fields it needs read where they
    /// are: a value passed on from its turn's values is copied (`SubjectReplicas.deliver`).
    @inline(__always)
    static func message(at value: UnsafePointer<ReplicatedValue>, in label: SubjectLabel) -> Message {
        if let mark = value.pointee.mark {
            return Message(mark: mark, label: label, seq: value.pointee.seq, time: value.pointee.time)
        }
        return Message(
            label: label, raw: value.pointee.raw, members: value.pointee.members, seq: value.pointee.seq,
            time: value.pointee.time)
    }
}

/// A subject's values of one turn of its owner's, as the loops holding replicas of it are
/// handed them: each value made and stored once, each loop's update naming those that go
/// there (`ReplicaUpdate.values`), so that a value crossing to three loops is not made and
/// copied three times, and no loop's batch allocates a value of its own.
///
/// Thread rules: appended to on the owner's loop until sealed, which the first update naming
/// it does as it closes (`ReaderLink`), before any loop is handed it; read-only after, on any
/// loop. Lifetime rule: held by the updates that name it, by its subject's entry on the owner
/// until the turn ends (`SubjectReplication`), and by the readers' `release` on its way back
/// to where its bytes were made.
final class ReplicatedValues: @unchecked Sendable {
    private(set) var values: [ReplicatedValue] = []
    private(set) var isSealed = false

    /// The reading loop whose client (a session's `pub`s, an HTTP body) published them
    /// through the owner, which made their bytes (`PublisherGate.maker`); nil for the owner's
    /// own. A turn's values have one maker.
    let maker: ReplicaReader?

    /// How many values a turn's take for the loops reading them to hand them back once
    /// delivered, to be let go where their bytes were made (`ReplicaRequest.release`: on the
    /// owner's loop, or on to their maker's), rather than where they are: the last to let go
    /// frees their bytes, and glibc's `free` of memory another thread's arena gave out takes
    /// that arena's lock and bins from under the thread allocating from it (bench/README.md,
    /// "Memory freed where it was made"). A turn of fewer goes where it is: handing it back
    /// would wake an idle loop for a few frees.
    static let releasedByMaker = 8

    /// Values with room for `capacity` of them, made by `maker`.
    init(capacity: Int, maker: ReplicaReader?) {
        values.reserveCapacity(capacity)
        self.maker = maker
    }

    /// Adds `value`, returning its place. The owner's loop, before the seal.
    func append(_ value: consuming ReplicatedValue) -> Int {
        precondition(!isSealed, "a value added to values handed to another loop")
        values.append(value)
        return values.count &- 1
    }

    /// No value is added from now on: an update naming them is about to go to another loop.
    /// The owner's loop.
    func seal() { isSealed = true }

    /// Whether values made by `maker` are added here: the seal is not on, and they are its.
    func isOpen(to maker: Unmanaged<ReplicaReader>?) -> Bool {
        !isSealed && maker?.toOpaque() == self.maker.map { Unmanaged.passUnretained($0).toOpaque() }
    }
}

/// One of a turn's `ReplicatedValues`, by its place there, with what it weighs in a reader's
/// backlog (`ReplicatedValue.weight`, kept here so that it is not read back through the
/// values). For the feed sending it now: the values are not retained (a feed sends every value
/// of the subject, and each reference count costs it), while its subject's entry holds them;
/// what keeps one longer holds its `values` itself.
struct ReplicatedValueRef {
    private let unretained: Unmanaged<ReplicatedValues>
    let index: Int
    let weight: Int

    init(_ values: Unmanaged<ReplicatedValues>, index: Int, weight: Int) {
        unretained = values
        self.index = index
        self.weight = weight
    }

    /// The values it is one of (a reference counted, for what keeps them).
    var values: ReplicatedValues { unretained.takeUnretainedValue() }

    /// Whether it is one of `values`.
    func isOne(of values: ReplicatedValues) -> Bool {
        unretained.toOpaque() == Unmanaged.passUnretained(values).toOpaque()
    }
}

/// How a subject ended, as a replica is told.
enum ReplicaEnd: Sendable {
    case completed
    case failed(ProtocolError)
    /// Deleted: its name is free, and a replica of it is let go.
    case deleted
}

/// A subject as its owner had it when a replica was asked for: its shape and position, the
/// values it keeps (a replay subject's history, a behavior's current value), and its end if it
/// has ended. `feed` numbers the updates that follow it (`ReplicaUpdate`).
struct ReplicaSnapshot: Sendable {
    let feed: UInt64
    let name: String
    let epoch: String
    let kind: SubjectKind
    let capacity: Int?
    let retainMilliseconds: Int64?
    let isDurable: Bool
    let slowConsumer: SlowConsumerPolicy?
    /// The seq of the subject's latest value (`SubjectEntry.lastSeq`).
    var lastSeq: UInt64
    /// The newest time of a value the subject no longer keeps (`DroppedValueTimes`).
    let droppedNewest: Int64?
    var values: [ReplicatedValue] = []
    /// A map's shape and keys; nil for a subject of another kind.
    var map: ReplicaMapState?
    var end: ReplicaEnd?
}

/// A map as its owner had it when a replica was asked for (version 1.3): its shape, its live
/// keys' latest values, the changes it keeps for `from` (removals among them), oldest first,
/// and the seq after which it keeps every change.
struct ReplicaMapState: Sendable {
    let ttlMilliseconds: Int64?
    let maxKeys: Int
    let keys: [ReplicatedValue]
    let changes: [ReplicatedValue]
    let resumesAfter: UInt64
}

/// What a subject's owner tells a loop holding replicas of its subjects, in the order it
/// happened there, one batch a turn.
enum ReplicaUpdate: Sendable {
    /// The replica asked for, as the subject is now; its values and end follow as `value`
    /// and `ended` of its feed.
    indirect case opened(ReplicaSnapshot)
    /// The replica of `name` cannot be had: what a `sub` of it on the owner would get
    /// (`unknown_subject` with `auto_create` off, `limit`, ...).
    case refused(name: String, ProtocolError)
    /// Values of the feed's subject, in order: a turn's run of them, one update naming their
    /// places in the turn's values of the subject (`ReaderLink.post`).
    case values(feed: UInt64, ReplicatedValues, [Int])
    /// The reader missed `count` values of the feed's subject, the loop behind under `drop` or
    /// past the hard limit (`ReaderLink`): told before the next value sent, or once the reader
    /// has caught up if none is sent first, which is when its subscriptions there are told
    /// (`dropped`).
    case missed(feed: UInt64, count: UInt64)
    /// The subject's own `slow_consumer` changed (a `create` of it, a reload): told before the
    /// first value after the change, which is when a subscriber reads it.
    case policy(feed: UInt64, SlowConsumerPolicy?)
    case ended(feed: UInt64, ReplicaEnd)
    /// The answer to the reader's forwarded request `ticket`: what its reply says, and whether
    /// it came at once (not after a write), the request's events for subscribers sent before it
    /// (a reply on the owner's loop follows them then, and precedes them otherwise).
    case answered(ticket: UInt64, SessionReply.Outcome, atOnce: Bool)
    /// What became of the reader's forwarded `pub`s `ticket` (`ReplicaRequest.publishValues`),
    /// and whether it was known at once (as `answered`).
    case publishedValues(ticket: UInt64, ForwardedPublish.Receipt, atOnce: Bool)
    /// What became of the reader's batch `ticket` (`ReplicaRequest.publish`).
    case published(ticket: UInt64, PublishedBatch.Receipt)
    /// A subscriber of the owner's began (`began`) or stopped lagging behind the values of
    /// the reader's publisher numbered `publisher` (its `pub`s the owner published), or a
    /// third loop behind on them began or stopped pacing it (`hold`).
    case hold(publisher: UInt64, PublisherHold, began: Bool)
    /// The owner's link to its cluster went down (`up` false) or came back: a `sub` that needs
    /// the cluster is refused meanwhile there as on the owner (`SubjectStore.checkShared`).
    case linked(up: Bool)
    /// The owner's cluster missed `count` values (nil: how many is not known) that the
    /// reader's subscription numbered `subscription` reads (`RemoteInterest`).
    case missedBy(subscription: UInt64, count: UInt64?)
    /// A turn of values this loop's client published through the owner, delivered by the
    /// loops that read them (`ReplicaRequest.release`): let go here, where their bytes were
    /// made.
    case release(ReplicatedValues)
}

/// A reading loop's subscriptions to one replica's subject, as it tells the owner
/// (`ReplicaRequest.count`).
struct ReplicaReaders: Sendable, Equatable {
    /// Every subscriber there: what `pub` counts as its receivers.
    var subscribers = 0
    /// Those naming the subject: what `list` and, with the reader's pattern subscriptions,
    /// `$sys.occupancy` count.
    var named = 0
    /// Those naming it with `"conflate": true`.
    var conflating = 0

    /// Every subscriber there conflates: the loop is judged as one conflating subscriber
    /// (`ReaderLink.admits`), whatever the subject's policy.
    var allConflate: Bool { subscribers > 0 && conflating == subscribers }
}

/// What a loop holding replicas asks of their subjects' owner, one batch a turn.
enum ReplicaRequest: Sendable {
    /// A replica of `name` (made a plain subject as a `sub` would, when `auto_create` is on),
    /// answered to `reader`.
    case open(name: String, reader: ReplicaReader)
    /// The reader's subscriptions to the feed's subject are now `readers`.
    case count(feed: UInt64, ReplicaReaders)
    /// The reader's pattern subscription numbered `id` began, reading what `pattern` says, or
    /// (nil) ended: what `$sys.occupancy` counts of it (`RemotePatternReach`).
    case patternReach(id: UInt64, PatternReader?, reader: ReplicaReader)
    /// The reader let its replica go; nothing more is sent for the feed.
    case close(feed: UInt64)
    /// The reader's pattern subscriptions to `pattern` need every subject it matches (but the
    /// reader's own): a replica of each there is now (`holding` excepted), answered to
    /// `reader` with `ticket` once they are sent, and of each made from now on.
    case watch(pattern: String, holding: [String], ticket: UInt64, reader: ReplicaReader)
    /// The reader has no pattern subscription to `pattern` left.
    case unwatch(pattern: String, reader: ReplicaReader)
    /// A subscriber of the reader's began (`began`) or stopped lagging behind the values of the
    /// owner's publisher numbered `publisher` (`ReplicatedValue.publisher`): always a
    /// `laggard` hold, as a reading loop paces nobody.
    case hold(publisher: UInt64, PublisherHold, began: Bool)
    /// What the reader's subscriptions read changed, for the owner's cluster
    /// (`RemoteInterest`).
    case interest(InterestChange, reader: ReplicaReader)
    /// The reader has caught up to what the owner waited for (`ReplicaBacklog.awaitCatchUp`):
    /// the publishers held for it go.
    case caughtUp(reader: ReplicaReader)
    /// The reader's first word, as its server starts: the owner links to it now, so that it
    /// hears of the cluster link's changes (`ReplicaUpdate.linked`) before it asks for anything
    /// (a loop that never did would go on answering `/healthz` as linked).
    case join(reader: ReplicaReader)
    /// Turns' values the reader has delivered, to be let go where their bytes were made: on
    /// the owner's loop, or sent on to their maker (`ReplicatedValues.releasedByMaker`).
    case release([ReplicatedValues])
    /// A request a session of the reader's received, carried out on the owner and answered to
    /// `reader` with `ticket` (`ReplicaUpdate.answered`).
    case forward(ForwardedRequest, ticket: UInt64, reader: ReplicaReader)
    /// `pub`s a session of the reader's received, published on the owner and answered to
    /// `reader` with `ticket` (`ReplicaUpdate.publishedValues`).
    case publishValues(ForwardedPublish, ticket: UInt64, reader: ReplicaReader)
    /// An HTTP request's values (`POST /pub`) from the reader's publisher numbered
    /// `publisher`, published on the owner and answered to `reader` with `ticket`
    /// (`ReplicaUpdate.published`).
    case publish(PublishedBatch, publisher: UInt64, ticket: UInt64, reader: ReplicaReader)
}

/// `pub`s without a key that one session of another loop received one after another, for the
/// subjects' owner to publish as that session's own would be: made with `grant`'s rights by the
/// reader's publisher numbered `publisher` (`PublisherRegistry`), whom a subscriber lagging
/// behind them may pause. A turn's run of quiet ones (no `ref`) to one subject crosses as one
/// (`Session.publishThroughOwner`), answered by one receipt.
struct ForwardedPublish: Sendable {
    /// A value, with where its members sit. A struct, not a tuple: an array of tuples is
    /// destroyed through the tuple's generic metadata (bench/README.md, "Figures behind
    /// comments in the code").
    struct Value: Sendable {
        let raw: RawJSON
        let members: JSONMemberIndex
    }

    let subject: String
    /// The values, in the order the session received them.
    var values: [Value]
    let grant: TokenGrant
    let publisher: UInt64

    /// What became of them: each that failed, by its place among them, in order, and the
    /// subscriptions the last reached (the `receivers` of a `pub` with a `ref`, always alone).
    struct Receipt: Sendable {
        var failures: [(index: Int, error: ProtocolError)] = []
        var receivers = 0
    }
}

/// A request a session of another loop received that the subjects' owner carries out, as
/// the same request of a session of its own would be (`ReplicaOwner.answer`).
enum ForwardedRequest: Sendable {
    /// A `pub` with a key: `value` written to `key` of the map `subject`, or the key removed
    /// (`value` nil, `delete: true`), as `publish`.
    case publishKeyed(
        subject: String, key: String, value: RawJSON?, members: JSONMemberIndex, grant: TokenGrant, publisher: UInt64)
    /// `create`, `complete`, `error` or `delete`, whose rights the session checked.
    case change(SubjectChange)
    /// `list`: the subjects under `prefix` that `grant` may list.
    case list(prefix: String, grant: TokenGrant)
    /// Nothing, answered `done`: its answer comes after every update the owner had sent the
    /// reader, so a `sub` waiting for it reads a replica that has them
    /// (`Session.subjectToRead`), and once the changes the owner made so far are written
    /// (in a cluster, the NATS subscriptions the reader's subscriptions made known to the other
    /// nodes: `RemoteInterest`). With `catchingUp`, a `from` beyond what the reader's replica
    /// of the subject has: in a cluster, once the owner has delivered it too (another node
    /// gave it), as a `sub` there waits (`SharedSubjects.whenDelivered`).
    case sync(catchingUp: (subject: String, from: Position)? = nil)
}

/// A loop holding replicas, as their owner sees it: where its updates go.
///
/// Thread rules: `inbox` and `backlog` from any thread. Lifetime rule: made by the reader's
/// `SubjectReplicas` and held by the owner while it feeds replicas of the reader's.
final class ReplicaReader: Sendable {
    let inbox: LoopInbox<ReplicaUpdate>
    /// How far it is behind the owner.
    let backlog = ReplicaBacklog()

    init(inbox: LoopInbox<ReplicaUpdate>) { self.inbox = inbox }
}
