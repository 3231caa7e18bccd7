import Synchronization

/// A hot signal that is also a subscriber (ReactiveCocoa's `RACSubject`): whatever it is sent,
/// it sends to every current subscriber. A plain subject delivers only what is sent after
/// subscribing.
///
/// Thread-safe (`SubjectThreading.shared`, the default). Events from several threads are
/// delivered one at a time, in the order the subject accepted them, through a drain queue: the
/// thread that finds the subject idle delivers, and events sent meanwhile (from other threads,
/// or re-entrantly from a subscriber) are delivered by it afterwards. No lock is held while
/// delivering (deliberate change 2 from ReactiveCocoa, whose replay subject delivers under its
/// lock and deadlocks re-entrant subscribers). A subject made `.confined` is used from one
/// thread only and takes no lock and no atomic operation per value; re-entrant sends and
/// subscriptions ended during a delivery are handled as for a shared one.
///
/// Deliberate change 1: the subject remembers its terminal event. Events sent after it are
/// ignored, and a late subscriber gets the kind's replayed values and then the terminal event
/// instead of waiting forever.
public class Subject<Value: Sendable>: Signal<Value>, Subscriber, @unchecked Sendable {
    /// The subscribers' passthroughs, typed as `AnyObject`: an array of a type generic over
    /// `Value` would cost a runtime metadata lookup per send in the library's unspecialised
    /// code. Every element is a `PassthroughSubscriber<Value>`.
    typealias Entries = ContiguousArray<AnyObject>

    /// Work waiting for the drain: an event for the subscribers there were when it was
    /// accepted, or the catch-up of one new subscriber.
    enum Job {
        case event(Event<Value>, Entries)
        case catchUp(PassthroughSubscriber<Value>, [Value], Event<Value>?)
    }

    // The state is kept in plain stored properties under one lock rather than a generic
    // struct: the library's generic code is not specialised for the caller's `Value`, and
    // every generic type it forms costs a runtime metadata lookup. The per-value path
    // (`sendNext` on an idle subject) touches only fields whose layout does not depend on
    // `Value`.
    /// The lock and the per-value fields, in an object of their own that subscriptions hold
    /// instead of the subject (see `SubjectRoster`). Every field below marked "guarded" is
    /// guarded by the roster's lock; no section under it calls out.
    let roster: SubjectRoster
    /// Guarded: the fields of the per-value path, in memory of their own. Reached
    /// through a pointer, they carry no dynamic exclusivity checks (which a class's stored
    /// `var`s get on every access), and their layout does not depend on `Value`.
    @inline(__always) private var core: UnsafeMutablePointer<SubjectCore> { roster.core }
    /// Guarded: the terminal event once accepted (`core.terminated` mirrors it).
    private var terminal: Event<Value>?
    /// Guarded: jobs queued for the delivering thread (the roster's delivery state counts them).
    private var jobs = RingBuffer<Job>()
    /// Guarded: the values kept for late subscribers (replay and behavior subjects).
    var history: RingBuffer<Value>
    private let keepsHistory: Bool
    /// What a kept value weighs (its size in bytes, say), for a subject whose history is
    /// bounded by weight as well as by count; nil when it is bounded by count only.
    private let weigh: (@Sendable (Value) -> Int)?
    /// The most the kept values may weigh together; the newest is kept whatever it weighs.
    private let maxHistoryWeight: Int
    /// Guarded: what the kept values weigh together (0 without `weigh`).
    var historyWeight = 0
    /// Told of each kept value dropped to make room or by `dropHistory(while:)`, oldest first,
    /// with the subject's lock held (so it must not call back into the subject).
    private let dropped: (@Sendable (Value) -> Void)?
    /// Makes a subscriber's entry. Made by the initialiser, which callers usually have
    /// specialised for their `Value`: the entry's generic type is then not looked up in the
    /// runtime's metadata cache on every subscribe, as the unspecialised `subscribe` would.
    private let makeEntry: @Sendable (any Subscriber<Value>, SubjectSubscription) -> PassthroughSubscriber<Value>

    /// Subscriptions this subject was handed as a subscriber (disposed when it terminates).
    public let disposable = CompoundDisposable()

    /// A plain subject, shared between threads or confined to one (`threading`).
    public init(threading: SubjectThreading = .shared) {
        roster = SubjectRoster(threading: threading)
        history = RingBuffer(capacity: 0)
        keepsHistory = false
        weigh = nil
        dropped = nil
        maxHistoryWeight = .max
        makeEntry = { PassthroughSubscriber($0, disposable: $1, lock: nil) }
        super.init(serializes: false, body: nil)
    }

    /// A subject that keeps its last `capacity` values for late subscribers, starting with the
    /// last `capacity` of `initial` and, when `terminal` is given, already terminated by it
    /// (for subclasses; `terminal` must be `error` or `completed`). With `weigh`, it also
    /// keeps no more of the oldest values than fit, with the newer ones, in `maxWeight`.
    /// `dropped` is told of each kept value let go.
    init(
        historyCapacity: Int, initial: [Value] = [], terminal: Event<Value>? = nil,
        maxWeight: Int = .max, weigh: (@Sendable (Value) -> Int)? = nil,
        dropped: (@Sendable (Value) -> Void)? = nil, threading: SubjectThreading
    ) {
        roster = SubjectRoster(threading: threading)
        precondition(terminal?.isTerminal ?? true, "a subject's terminal event must be error or completed")
        precondition(maxWeight >= 0, "a subject's history weight must be >= 0")
        self.history = RingBuffer<Value>(capacity: historyCapacity)
        keepsHistory = historyCapacity > 0
        self.weigh = weigh
        self.dropped = dropped
        maxHistoryWeight = maxWeight
        makeEntry = { PassthroughSubscriber($0, disposable: $1, lock: nil) }
        super.init(serializes: false, body: nil)
        for value in initial { record(value) }
        if let terminal {
            self.terminal = terminal
            core.pointee.terminated = true
            disposable.dispose()
        }
    }

    /// A subject dropped without terminating lets its subscribers go: their removal actions
    /// hold the roster, and the roster holds them, so the list is emptied here.
    deinit { roster.removeAll() }

    /// The number of current subscribers.
    public var subscriberCount: Int {
        roster.withLock { core.pointee.entries.count - core.pointee.leaving.count }
    }

    /// Whether the subject has been sent a terminal event.
    public var isTerminated: Bool { roster.withLock { core.pointee.terminated } }

    /// The terminal event, once the subject has one.
    public var terminalEvent: Event<Value>? { roster.withLock { terminal } }

    // MARK: Subscribing

    @discardableResult
    public override func subscribe(_ subscriber: any Subscriber<Value>) -> Disposable {
        // Neither the entry nor the subject is held by the subscription: the roster's list is
        // what keeps a live subscription alive, and the entry's identity is enough to find it.
        // No weak reference is formed either, which would move the subject's reference
        // counts, taken on every publish, to a slow side table.
        let disposable = SubjectSubscription(roster: roster)
        // Hands `disposable` to the subscriber, which may dispose it before the entry is listed.
        let entry = makeEntry(subscriber, disposable)
        roster.lock()
        if !core.pointee.terminated && !disposable.isDisposed {
            disposable.entry = ObjectIdentifier(entry)
            core.pointee.entries.append(entry)
        }
        let startDrain = keepsHistory || core.pointee.terminated ? queueCatchUp(entry) : false
        roster.unlock()
        if startDrain { drain() }
        return disposable
    }

    /// Queues what a new subscriber is owed: the kept values and the terminal event (lock
    /// held). Returns whether this thread must drain. Kept out of `subscribe`, so that a
    /// plain subject's subscribe does not look up the metadata of the job types.
    @inline(never)
    private func queueCatchUp(_ entry: PassthroughSubscriber<Value>) -> Bool {
        guard !history.isEmpty || core.pointee.terminated else { return false }
        jobs.append(.catchUp(entry, history.elements, terminal))
        return roster.jobQueued()
    }

    // MARK: Sending

    public final func sendNext(_ value: Value) {
        roster.lock()
        if core.pointee.terminated {
            roster.unlock()
            return
        }
        if keepsHistory { record(value) }
        // Idle stays idle while the lock is held (only the delivering thread leaves a state
        // without the lock, and only to idle).
        if roster.deliveryState != DeliveryState.idle {
            let startDrain = enqueue(value)
            roster.unlock()
            if startDrain { drain() }
            return
        }
        roster.setDeliveryState(DeliveryState.delivering)
        if roster.isConfined {
            // No lock to drop.
            deliverInPlace(value)
        } else {
            let current = core.pointee.entries
            roster.unlock()
            var index = 0
            while index < current.count {
                // `current` holds every entry until the loop ends: no retain and release per
                // subscriber per value.
                Unmanaged.passUnretained(Self.subscriber(current[index]))._withUnsafeGuaranteedRef {
                    $0.sendNext(value)
                }
                index += 1
            }
        }
        finishDelivery()
    }

    /// A confined subject's delivery of `value` to the entries listed now, each read where it
    /// is: holding a copy of the list would take a reference count and give it back a value (a
    /// locked instruction each, dear on a loop among others). While it delivers, an entry
    /// leaving stays listed (`SubjectRoster.remove`) and one subscribing is appended past the
    /// entries it delivers to; the list may be moved by growing, so each entry is read anew.
    @inline(__always)
    private func deliverInPlace(_ value: Value) {
        let count = core.pointee.entries.count
        var index = 0
        while index < count {
            let entry = core.pointee.entries.withUnsafeBufferPointer { Unmanaged.passUnretained($0[index]) }
            entry._withUnsafeGuaranteedRef { Self.subscriber($0).sendNext(value) }
            index += 1
        }
    }

    // The generic-typed work of `sendNext` sits in functions of its own, so that the runtime
    // metadata it needs is not looked up on the path that does not use it.
    @inline(never)
    private func record(_ value: Value) {
        if history.count == history.capacity, let oldest = history.first {
            if let weigh { historyWeight -= weigh(oldest) }
            dropped?(oldest)
        }
        history.append(value)
        guard let weigh else { return }
        historyWeight += weigh(value)
        while historyWeight > maxHistoryWeight && history.count > 1 {
            let oldest = history.popFirst()!
            historyWeight -= weigh(oldest)
            dropped?(oldest)
        }
    }

    /// Drops the oldest kept values while `isStale` says so of them (the newest included), and
    /// returns how many went; `dropped` is told of each.
    @inline(never)
    func dropHistory(while isStale: (Value) -> Bool) -> Int {
        roster.withLock {
            var count = 0
            while let oldest = history.first, isStale(oldest) {
                _ = history.popFirst()
                if let weigh { historyWeight -= weigh(oldest) }
                dropped?(oldest)
                count += 1
            }
            return count
        }
    }

    /// Returns whether this thread must now drain (the delivering one went idle meanwhile).
    @inline(never)
    private func enqueue(_ value: Value) -> Bool {
        jobs.append(.event(.next(value), core.pointee.entries))
        return roster.jobQueued()
    }

    public final func sendError(_ error: any Error) { acceptTerminal(.error(error)) }
    public final func sendCompleted() { acceptTerminal(.completed) }

    public func didSubscribe(with other: CompoundDisposable) {
        // The subscription takes itself out of `disposable` when it ends.
        disposable.addPurging(other)
    }

    /// Records the terminal event and delivers it, or queues it for the thread already
    /// delivering. Nobody stays subscribed; late subscribers catch up instead.
    private func acceptTerminal(_ event: Event<Value>) {
        roster.lock()
        guard !core.pointee.terminated else {
            roster.unlock()
            return
        }
        core.pointee.terminated = true
        terminal = event
        let current = core.pointee.entries
        core.pointee.entries = []
        core.pointee.leaving = []
        if roster.deliveryState != DeliveryState.idle {
            jobs.append(.event(event, current))
            let startDrain = roster.jobQueued()
            roster.unlock()
            if startDrain { drain() }
        } else {
            roster.setDeliveryState(DeliveryState.delivering)
            roster.unlock()
            deliver(event, to: current)
            finishDelivery()
        }
        disposable.dispose()
    }

    @inline(__always)
    private static func subscriber(_ entry: AnyObject) -> PassthroughSubscriber<Value> {
        unsafeDowncast(entry, to: PassthroughSubscriber<Value>.self)
    }

    private func deliver(_ event: Event<Value>, to entries: Entries) {
        switch event {
        case .next(let value):
            for entry in entries { Self.subscriber(entry).sendNext(value) }
        case .error(let error):
            for entry in entries { Self.subscriber(entry).sendError(error) }
        case .completed:
            for entry in entries { Self.subscriber(entry).sendCompleted() }
        }
    }

    /// Marks the subject idle, or runs the jobs queued while this thread delivered (and takes
    /// out the entries that ended). Without the lock: one compare-and-swap when neither
    /// happened (none for a confined subject).
    @inline(__always)
    private func finishDelivery() {
        if roster.finishDeliveringIfNothingWaits() { return }
        drain()
    }

    /// Runs queued jobs until none is left, then takes out the entries that ended meanwhile
    /// and marks the subject idle. Called only by the delivering thread.
    private func drain() {
        while true {
            roster.lock()
            guard let job = jobs.popFirst() else {
                let removed = roster.takeOutLeaving()
                roster.setDeliveryState(DeliveryState.idle)
                roster.unlock()
                withExtendedLifetime(removed) {}
                return
            }
            roster.jobTaken()
            roster.unlock()
            switch job {
            case .event(let event, let entries):
                deliver(event, to: entries)
            case .catchUp(let subscriber, let values, let terminal):
                for value in values { subscriber.sendNext(value) }
                if let terminal { terminal.send(to: subscriber) }
            }
        }
    }
}

/// How a subject may be used: from any thread, or from one thread only, which then pays no
/// lock and no atomic operation per value (a subject an event loop owns, say).
public enum SubjectThreading: Sendable, CaseIterable {
    /// Any thread may subscribe, send and dispose, at the same time.
    case shared
    /// One thread at a time subscribes, sends, disposes and reads, and another takes over only
    /// after a happens-before edge (the thread sanitizer reports any other use).
    case confined
}

/// The part of a subject's state on the per-value path; guarded by the subject's lock.
struct SubjectCore {
    /// The subscribers' passthroughs (see `Subject.Entries`).
    var entries: ContiguousArray<AnyObject> = []
    /// Whether a terminal event was accepted.
    var terminated = false
    /// Entries still in `entries` whose subscriptions ended while a thread delivered: taken
    /// out together when it goes idle (`SubjectRoster.remove`). Each is listed, once.
    var leaving: ContiguousArray<ObjectIdentifier> = []
    /// A confined subject's delivery state (`SubjectRoster`'s atomic for a shared one).
    var delivery = DeliveryState.idle
}

/// The values of a subject's delivery state (`SubjectRoster.deliveryState`: an atomic for a
/// shared subject, `SubjectCore.delivery` for a confined one): whether a thread is delivering
/// (the low bit), whether entries wait to be taken out when it stops (`leaving`, set only while
/// delivering), plus `job` for each job queued for it in `Subject.jobs`.
enum DeliveryState {
    static let idle = 0
    static let delivering = 1
    static let leaving = 2
    static let job = 4
}
