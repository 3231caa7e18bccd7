extension Signal {
    /// Sends a value only once `interval` has passed on `scheduler` with no newer value; a
    /// newer value replaces the held one (ReactiveCocoa's `throttle:`).
    ///
    /// Completion sends the held value first, then completes. An error drops the held value
    /// and is sent at once. Disposal cancels the pending send. The interval is measured on
    /// `scheduler`, which also sends the held values.
    public func throttle(_ interval: Duration, on scheduler: any Scheduler) -> Signal<Value> {
        throttle(interval, on: scheduler, valuesPassing: { _ in true })
    }

    /// Throttles only the values passing `shouldThrottle` (ReactiveCocoa's
    /// `throttle:valuesPassingTest:`).
    ///
    /// A value passing the test is held until `interval` passes on `scheduler` with no newer
    /// value. A value failing it is sent at once, and any held value is dropped. Completion
    /// sends the held value first, then completes; an error drops it. Disposal cancels the
    /// pending send.
    public func throttle(
        _ interval: Duration, on scheduler: any Scheduler,
        valuesPassing shouldThrottle: @escaping @Sendable (Value) -> Bool
    ) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -throttle: \(interval) valuesPassingTest:") {
            downstream in
            let sink = ThrottleSink(
                downstream: downstream, interval: interval, scheduler: scheduler, shouldThrottle: shouldThrottle)
            let subscription = source.subscribe(sink)
            return CompoundDisposable([subscription, Disposable { sink.cancel() }])
        }
    }
}

/// Holds the latest throttled value until its timer fires.
///
/// The source and the scheduler both send, so one recursive lock guards the state and every
/// send (recursive: a downstream may dispose, and so cancel, from inside a send).
final class ThrottleSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let interval: Duration
    private let scheduler: any Scheduler
    private let shouldThrottle: @Sendable (Value) -> Bool
    private let lock = Lock(recursive: true)
    /// Guarded by `lock`.
    private var held: Value?
    private var timer: Disposable?
    /// Tells a timer that fires after being replaced to do nothing.
    private var generation: UInt64 = 0
    private var stopped = false

    init(
        downstream: any Subscriber<Value>, interval: Duration, scheduler: any Scheduler,
        shouldThrottle: @escaping @Sendable (Value) -> Bool
    ) {
        self.downstream = downstream
        self.interval = interval
        self.scheduler = scheduler
        self.shouldThrottle = shouldThrottle
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        let throttles = shouldThrottle(value)
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        dropHeld()
        guard throttles else {
            downstream.sendNext(value)
            return
        }
        held = value
        generation &+= 1
        let expected = generation
        let timer = scheduler.after(delay: interval) { [self] in fire(expected) }
        if generation == expected && held != nil { self.timer = timer }
    }

    private func fire(_ expected: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped, generation == expected, let value = held else { return }
        held = nil
        timer = nil
        downstream.sendNext(value)
    }

    /// Called with the lock held.
    private func dropHeld() {
        timer?.dispose()
        timer = nil
        held = nil
    }

    func sendError(_ error: any Error) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        dropHeld()
        downstream.sendError(error)
    }

    func sendCompleted() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        let value = held
        dropHeld()
        if let value { downstream.sendNext(value) }
        downstream.sendCompleted()
    }

    /// The subscription was disposed: forget the held value and cancel its timer.
    func cancel() {
        lock.withLock {
            stopped = true
            dropHeld()
        }
    }
}
