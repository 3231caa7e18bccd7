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
    /// One subscriber's place in the subject.
    final class Entry: @unchecked Sendable {
        let subscriber: PassthroughSubscriber<Value>
        init(_ subscriber: PassthroughSubscriber<Value>) { self.subscriber = subscriber }
    }

    /// Work waiting for the drain: an event for the subscribers there were when it was
    /// accepted, or the catch-up of one new subscriber.
    enum Job {
        case event(Event<Value>, ContiguousArray<Entry>)
        case catchUp(Entry, [Value], Event<Value>?)
    }

    struct State {
        var entries: ContiguousArray<Entry> = []
        var terminal: Event<Value>?
        var draining = false
        var jobs = RingBuffer<Job>()
        var history: RingBuffer<Value>
    }

    let state: Locked<State>

    /// Subscriptions this subject was handed as a subscriber (disposed when it terminates).
    public let disposable = CompoundDisposable()

    /// A plain subject.
    public init() {
        state = Locked(State(history: RingBuffer(capacity: 0)))
        super.init(serializes: false, body: nil)
    }

    /// A subject that keeps its last `capacity` values for late subscribers (for subclasses).
    init(historyCapacity: Int, initial: [Value] = []) {
        var history = RingBuffer<Value>(capacity: historyCapacity)
        for value in initial { history.append(value) }
        state = Locked(State(history: history))
        super.init(serializes: false, body: nil)
    }

    /// The number of current subscribers.
    public var subscriberCount: Int { state.withLock { $0.entries.count } }

    /// Whether the subject has been sent a terminal event.
    public var isTerminated: Bool { state.withLock { $0.terminal != nil } }

    /// The terminal event, once the subject has one.
    public var terminalEvent: Event<Value>? { state.withLock { $0.terminal } }

    // MARK: Subscribing

    @discardableResult
    public override func subscribe(_ subscriber: any Subscriber<Value>) -> Disposable {
        let disposable = CompoundDisposable()
        let entry = Entry(PassthroughSubscriber(subscriber, disposable: disposable, lock: nil))
        let startDrain: Bool = state.withLock { state in
            let replayed = state.history.elements
            if state.terminal == nil { state.entries.append(entry) }
            guard !replayed.isEmpty || state.terminal != nil else { return false }
            state.jobs.append(.catchUp(entry, replayed, state.terminal))
            if state.draining { return false }
            state.draining = true
            return true
        }
        disposable.add(
            Disposable { [weak self] in
                self?.state.withLock { state in
                    if let index = state.entries.lastIndex(where: { $0 === entry }) {
                        state.entries.remove(at: index)
                    }
                }
            })
        if startDrain { drain() }
        return disposable
    }

    // MARK: Sending

    public func sendNext(_ value: Value) { accept(.next(value)) }
    public func sendError(_ error: any Error) { accept(.error(error)) }
    public func sendCompleted() { accept(.completed) }

    public func didSubscribe(with other: CompoundDisposable) {
        guard !other.isDisposed else { return }
        disposable.add(other)
        other.add(PurgeDisposable(parent: disposable, child: other))
    }

    /// Records `event` and delivers it, or queues it for the thread already delivering.
    final func accept(_ event: Event<Value>) {
        let (accepted, deliverNow, entries): (Bool, Bool, ContiguousArray<Entry>) = state.withLock { state in
            guard state.terminal == nil else { return (false, false, []) }
            let current = state.entries
            switch event {
            case .next(let value):
                state.history.append(value)
            case .error, .completed:
                // Terminated: nobody stays subscribed; late subscribers catch up instead.
                state.terminal = event
                state.entries = []
            }
            if state.draining {
                state.jobs.append(.event(event, current))
                return (true, false, [])
            }
            state.draining = true
            return (true, true, current)
        }
        if deliverNow {
            deliver(event, to: entries)
            drain()
        }
        if accepted && event.isTerminal { disposable.dispose() }
    }

    @inline(__always)
    private func deliver(_ event: Event<Value>, to entries: ContiguousArray<Entry>) {
        switch event {
        case .next(let value):
            for entry in entries { entry.subscriber.sendNext(value) }
        case .error(let error):
            for entry in entries { entry.subscriber.sendError(error) }
        case .completed:
            for entry in entries { entry.subscriber.sendCompleted() }
        }
    }

    /// Runs queued jobs until none is left, then marks the subject idle. Called only by the
    /// thread that set `draining`.
    private func drain() {
        while true {
            let job: Job? = state.withLock { state in
                if let job = state.jobs.popFirst() { return job }
                state.draining = false
                return nil
            }
            guard let job else { return }
            switch job {
            case .event(let event, let entries):
                deliver(event, to: entries)
            case .catchUp(let entry, let values, let terminal):
                for value in values { entry.subscriber.sendNext(value) }
                if let terminal { terminal.send(to: entry.subscriber) }
            }
        }
    }
}
