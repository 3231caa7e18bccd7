extension Signal {
    /// Fails with `RunnelError.timedOut` unless this signal terminates within `interval` of
    /// subscribing, measured on `scheduler` (ReactiveCocoa's `timeout:onScheduler:`).
    ///
    /// There is one deadline per subscription, set when it starts; values do not extend it.
    /// Values, errors and completion before the deadline pass through, and a terminal event
    /// cancels the deadline. At the deadline the source subscription is disposed and the
    /// error sent. Once the subscription is disposed the deadline never fires.
    public func timeout(_ interval: Duration, on scheduler: any Scheduler) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -timeout: \(interval)") { downstream in
            let sink = TimeoutSink(downstream: downstream)
            let deadline = scheduler.after(delay: interval) { sink.fire() }
            sink.setDeadline(deadline)
            let subscription = source.subscribe(sink)
            return CompoundDisposable([subscription, Disposable { sink.cancel() }])
        }
    }
}

/// Forwards events until the deadline fires, then disposes the source and sends the error.
///
/// The source and the scheduler both send, so one recursive lock guards the state and every
/// send.
final class TimeoutSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let lock = Lock(recursive: true)
    /// Guarded by `lock`.
    private var upstream: CompoundDisposable?
    private var deadline: Disposable?
    private var stopped = false

    init(downstream: any Subscriber<Value>) { self.downstream = downstream }

    func setDeadline(_ deadline: Disposable?) {
        lock.withLock {
            if stopped { deadline?.dispose() } else { self.deadline = deadline }
        }
    }

    func didSubscribe(with disposable: CompoundDisposable) {
        lock.withLock { if upstream == nil { upstream = disposable } }
        downstream.didSubscribe(with: disposable)
    }

    func sendNext(_ value: Value) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        downstream.sendNext(value)
    }

    func sendError(_ error: any Error) {
        lock.lock()
        defer { lock.unlock() }
        guard stop() else { return }
        downstream.sendError(error)
    }

    func sendCompleted() {
        lock.lock()
        defer { lock.unlock() }
        guard stop() else { return }
        downstream.sendCompleted()
    }

    /// The deadline passed.
    func fire() {
        lock.lock()
        defer { lock.unlock() }
        guard stop() else { return }
        upstream?.dispose()
        downstream.sendError(RunnelError.timedOut)
    }

    /// The subscription was disposed.
    func cancel() { lock.withLock { _ = stop() } }

    /// Marks the sink stopped and cancels the deadline; false if it already was (lock held).
    private func stop() -> Bool {
        guard !stopped else { return false }
        stopped = true
        deadline?.dispose()
        deadline = nil
        return true
    }
}
