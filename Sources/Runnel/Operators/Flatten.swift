extension Signal {
    /// Subscribes to every signal this signal of signals sends and sends on all their values
    /// (ReactiveCocoa's `flatten` and `flatten:`).
    ///
    /// With `maxConcurrent` above zero at most that many inner signals are subscribed at once;
    /// the others wait in order and each is subscribed when a running one completes. Zero
    /// means no limit. Completes when this signal and every inner signal (running or waiting)
    /// have completed. The first error, from this signal or an inner one, is sent on and
    /// disposes everything. Disposing the result disposes this signal and every inner one.
    public func flatten<T: Sendable>(maxConcurrent: Int = 0) -> Signal<T> where Value == Signal<T> {
        precondition(maxConcurrent >= 0, "maxConcurrent must be >= 0")
        return Signal<T>.operatorSignal(name: "[\(self.name)] -flatten: \(maxConcurrent)") { downstream in
            FlattenState(maxConcurrent: maxConcurrent, downstream).start(self)
            return nil
        }
    }

    /// Subscribes to each signal this signal of signals sends only after the previous one has
    /// completed (ReactiveCocoa's `concat`, which is `flatten:1`): values come in the order of
    /// the signals. Completion and errors as in `flatten(maxConcurrent:)`.
    public func concat<T: Sendable>() -> Signal<T> where Value == Signal<T> {
        flatten(maxConcurrent: 1)
    }
}

/// The state of one `flatten` subscription, guarded by the output's lock.
final class FlattenState<T: Sendable>: @unchecked Sendable {
    private let output: SerializedOutput<T>
    private let maxConcurrent: Int
    private var active = 0
    private var waiting = RingBuffer<Signal<T>>()
    private var outerCompleted = false
    /// Whether `drain` is running on this thread; an inner signal that completes while it is
    /// being subscribed lets that loop subscribe the next one, so long chains take no stack.
    private var draining = false

    init(maxConcurrent: Int, _ downstream: any Subscriber<T>) {
        output = SerializedOutput(downstream)
        self.maxConcurrent = maxConcurrent
    }

    func start(_ outer: Signal<Signal<T>>) {
        output.lock.withLock {
            _ = outer.subscribe(output.member { [self] event in onOuter(event) })
        }
    }

    /// Called with the lock held, as are the methods below.
    private func onOuter(_ event: Event<Signal<T>>) {
        switch event {
        case .next(let inner):
            waiting.append(inner)
            drain()
        case .error(let error):
            output.sendError(error)
        case .completed:
            outerCompleted = true
            completeIfDone()
        }
    }

    private func onInner(_ event: Event<T>) {
        switch event {
        case .next(let value):
            output.sendNext(value)
        case .error(let error):
            output.sendError(error)
        case .completed:
            active -= 1
            drain()
        }
    }

    private func drain() {
        if draining { return }
        draining = true
        while !output.isStopped, maxConcurrent == 0 || active < maxConcurrent, let inner = waiting.popFirst() {
            active += 1
            inner.subscribe(output.member { [self] event in onInner(event) })
        }
        draining = false
        completeIfDone()
    }

    private func completeIfDone() {
        if outerCompleted && active == 0 && waiting.isEmpty && !draining { output.sendCompleted() }
    }
}
