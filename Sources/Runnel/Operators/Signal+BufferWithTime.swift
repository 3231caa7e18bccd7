extension Signal {
    /// Collects values into arrays by time (ReactiveCocoa's `bufferWithTime:onScheduler:`).
    ///
    /// A window opens at the first value after the previous window closed and closes
    /// `interval` later on `scheduler`, sending everything it collected as one array; no
    /// empty array is ever sent. Completion sends the open window's values first, then
    /// completes. An error drops them and is sent at once. Disposal cancels the window.
    public func buffer(withTime interval: Duration, on scheduler: any Scheduler) -> Signal<[Value]> {
        let source = self
        return Signal<[Value]>.operatorSignal(name: "[\(source.name)] -bufferWithTime: \(interval)") { downstream in
            let sink = BufferWithTimeSink(downstream: downstream, interval: interval, scheduler: scheduler)
            let subscription = source.subscribe(sink)
            return CompoundDisposable([subscription, Disposable { sink.cancel() }])
        }
    }
}

/// Collects the values of one window and sends them when its timer fires.
///
/// The source and the scheduler both send, so one recursive lock guards the state and every
/// send.
final class BufferWithTimeSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<[Value]>
    private let interval: Duration
    private let scheduler: any Scheduler
    private let lock = Lock(recursive: true)
    /// Guarded by `lock`.
    private var values: [Value] = []
    private var timer: Disposable?
    /// Tells a timer whose window was already flushed to do nothing.
    private var window: UInt64 = 0
    private var stopped = false

    init(downstream: any Subscriber<[Value]>, interval: Duration, scheduler: any Scheduler) {
        self.downstream = downstream
        self.interval = interval
        self.scheduler = scheduler
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        values.append(value)
        guard values.count == 1 else { return }
        window &+= 1
        let expected = window
        let timer = scheduler.after(delay: interval) { [self] in close(expected) }
        if window == expected && !values.isEmpty { self.timer = timer }
    }

    private func close(_ expected: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped, window == expected else { return }
        timer = nil
        flush()
    }

    /// Sends the collected values, if any (called with the lock held).
    private func flush() {
        guard !values.isEmpty else { return }
        let batch = values
        values = []
        window &+= 1
        downstream.sendNext(batch)
    }

    func sendError(_ error: any Error) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        timer?.dispose()
        timer = nil
        values = []
        downstream.sendError(error)
    }

    func sendCompleted() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        timer?.dispose()
        timer = nil
        flush()
        downstream.sendCompleted()
    }

    /// The subscription was disposed: drop the window and cancel its timer.
    func cancel() {
        lock.withLock {
            stopped = true
            timer?.dispose()
            timer = nil
            values = []
        }
    }
}
