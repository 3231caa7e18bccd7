extension Signal {
    /// Sends each value and the completion `interval` later, on `scheduler` (ReactiveCocoa's
    /// `delay:`).
    ///
    /// Errors are not delayed: an error is sent at once and cancels every delayed value and a
    /// delayed completion. Disposal cancels everything still delayed.
    public func delay(_ interval: Duration, on scheduler: any Scheduler) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -delay: \(interval)") { downstream in
            let sink = DelaySink(downstream: downstream, interval: interval, scheduler: scheduler)
            let subscription = source.subscribe(sink)
            return CompoundDisposable([subscription, Disposable { sink.cancel() }])
        }
    }
}

/// Schedules each event `interval` later and remembers the pending ones so that an error or
/// disposal can cancel them.
///
/// The source and the scheduler both send, so one recursive lock guards the state and every
/// send.
final class DelaySink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let interval: Duration
    private let scheduler: any Scheduler
    private let lock = Lock(recursive: true)
    /// Guarded by `lock`: the scheduled sends not yet run, by id.
    private var pending: [UInt64: Disposable] = [:]
    private var nextID: UInt64 = 0
    /// The id of a send that ran inside `scheduler.after` (a synchronous scheduler).
    private var ranInline: UInt64?
    private var stopped = false

    init(downstream: any Subscriber<Value>, interval: Duration, scheduler: any Scheduler) {
        self.downstream = downstream
        self.interval = interval
        self.scheduler = scheduler
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        schedule { [downstream] in downstream.sendNext(value) }
    }

    func sendCompleted() {
        schedule { [self] in
            stopped = true
            downstream.sendCompleted()
        }
    }

    func sendError(_ error: any Error) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        cancelPending()
        downstream.sendError(error)
    }

    /// Runs `send` after `interval`, holding the lock, unless stopped by then.
    private func schedule(_ send: @escaping @Sendable () -> Void) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        let id = nextID
        nextID &+= 1
        let work = scheduler.after(delay: interval) { [self] in
            lock.lock()
            defer { lock.unlock() }
            if pending.removeValue(forKey: id) == nil { ranInline = id }
            guard !stopped else { return }
            send()
        }
        if ranInline == id {
            ranInline = nil
        } else if let work {
            pending[id] = work
        }
    }

    /// Called with the lock held.
    private func cancelPending() {
        for work in pending.values { work.dispose() }
        pending = [:]
    }

    /// The subscription was disposed: cancel every delayed send.
    func cancel() {
        lock.withLock {
            stopped = true
            cancelPending()
        }
    }
}
