/// A hot signal that is also a subscriber (ReactiveCocoa's `RACSubject`): whatever it is sent,
/// it sends to every current subscriber. A plain subject delivers only what is sent after
/// subscribing.
///
/// Thread-safe. Events from several threads are delivered one at a time, in the order the
/// subject accepted them, through a drain queue: the thread that finds the subject idle
/// delivers, and events sent meanwhile (from other threads, or re-entrantly from a
/// subscriber) are delivered by it afterwards. No lock is held while delivering (deliberate
/// change 2 from ReactiveCocoa, whose replay subject delivers under its lock and deadlocks
/// re-entrant subscribers).
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
    let lock = Lock()
    /// Guarded by `lock`: the current subscribers.
    private var entries: Entries = []
    /// Guarded by `lock`: the terminal event once accepted; `terminated` mirrors it.
    private var terminal: Event<Value>?
    private var terminated = false
    /// Guarded by `lock`: a thread is delivering; jobs queued for it, and their number.
    private var draining = false
    private var jobs = RingBuffer<Job>()
    private var jobCount = 0
    /// Guarded by `lock`: the values kept for late subscribers (replay and behavior subjects).
    var history: RingBuffer<Value>
    private let keepsHistory: Bool

    /// Subscriptions this subject was handed as a subscriber (disposed when it terminates).
    public let disposable = CompoundDisposable()

    /// A plain subject.
    public init() {
        history = RingBuffer(capacity: 0)
        keepsHistory = false
        super.init(serializes: false, body: nil)
    }

    /// A subject that keeps its last `capacity` values for late subscribers (for subclasses).
    init(historyCapacity: Int, initial: [Value] = []) {
        var history = RingBuffer<Value>(capacity: historyCapacity)
        for value in initial { history.append(value) }
        self.history = history
        keepsHistory = historyCapacity > 0
        super.init(serializes: false, body: nil)
    }

    /// The number of current subscribers.
    public var subscriberCount: Int { lock.withLock { entries.count } }

    /// Whether the subject has been sent a terminal event.
    public var isTerminated: Bool { lock.withLock { terminated } }

    /// The terminal event, once the subject has one.
    public var terminalEvent: Event<Value>? { lock.withLock { terminal } }

    // MARK: Subscribing

    @discardableResult
    public override func subscribe(_ subscriber: any Subscriber<Value>) -> Disposable {
        let disposable = CompoundDisposable()
        let entry = PassthroughSubscriber(subscriber, disposable: disposable, lock: nil)
        lock.lock()
        if !terminated { entries.append(entry) }
        var startDrain = false
        if !history.isEmpty || terminated {
            jobs.append(.catchUp(entry, history.elements, terminal))
            jobCount += 1
            if !draining {
                draining = true
                startDrain = true
            }
        }
        lock.unlock()
        disposable.add(
            Disposable { [weak self] in
                self?.remove(entry)
            })
        if startDrain { drain() }
        return disposable
    }

    private func remove(_ entry: AnyObject) {
        lock.withLock {
            if let index = entries.lastIndex(where: { $0 === entry }) { entries.remove(at: index) }
        }
    }

    // MARK: Sending

    public final func sendNext(_ value: Value) {
        lock.lock()
        if terminated {
            lock.unlock()
            return
        }
        if keepsHistory { record(value) }
        if draining {
            enqueue(value)
            lock.unlock()
            return
        }
        draining = true
        let current = entries
        lock.unlock()
        var index = 0
        while index < current.count {
            Self.subscriber(current[index]).sendNext(value)
            index += 1
        }
        finishDelivery()
    }

    // The generic-typed work of `sendNext` sits in functions of its own, so that the runtime
    // metadata it needs is not looked up on the path that does not use it.
    @inline(never)
    private func record(_ value: Value) { history.append(value) }

    @inline(never)
    private func enqueue(_ value: Value) {
        jobs.append(.event(.next(value), entries))
        jobCount += 1
    }

    public final func sendError(_ error: any Error) { acceptTerminal(.error(error)) }
    public final func sendCompleted() { acceptTerminal(.completed) }

    public func didSubscribe(with other: CompoundDisposable) {
        guard !other.isDisposed else { return }
        disposable.add(other)
        other.add(PurgeDisposable(parent: disposable, child: other))
    }

    /// Records the terminal event and delivers it, or queues it for the thread already
    /// delivering. Nobody stays subscribed; late subscribers catch up instead.
    private func acceptTerminal(_ event: Event<Value>) {
        lock.lock()
        guard !terminated else {
            lock.unlock()
            return
        }
        terminated = true
        terminal = event
        let current = entries
        entries = []
        if draining {
            jobs.append(.event(event, current))
            jobCount += 1
            lock.unlock()
        } else {
            draining = true
            lock.unlock()
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

    /// Marks the subject idle, or runs the jobs queued while this thread delivered.
    @inline(__always)
    private func finishDelivery() {
        lock.lock()
        if jobCount == 0 {
            draining = false
            lock.unlock()
            return
        }
        lock.unlock()
        drain()
    }

    /// Runs queued jobs until none is left, then marks the subject idle. Called only by the
    /// thread that set `draining`.
    private func drain() {
        while true {
            lock.lock()
            guard let job = jobs.popFirst() else {
                draining = false
                lock.unlock()
                return
            }
            jobCount -= 1
            lock.unlock()
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
