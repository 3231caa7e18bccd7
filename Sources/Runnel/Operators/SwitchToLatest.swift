extension Signal {
    /// Sends the values of the latest signal this signal of signals has sent: each new inner
    /// signal disposes the one before it (ReactiveCocoa's `switchToLatest`).
    ///
    /// Completes only when this signal has completed and so has the latest inner signal (or
    /// none was sent); the outer signal completing alone does not complete the result. The
    /// first error, from this signal or the current inner one, is sent on and disposes both.
    /// Disposing the result disposes both.
    public func switchToLatest<T: Sendable>() -> Signal<T> where Value == Signal<T> {
        Signal<T>.operatorSignal(name: "[\(self.name)] -switchToLatest") { downstream in
            SwitchToLatestState(downstream).start(self)
            return nil
        }
    }
}

/// The state of one `switchToLatest` subscription, guarded by the output's lock.
final class SwitchToLatestState<T: Sendable>: @unchecked Sendable {
    private let output: SerializedOutput<T>
    private var current: MemberSink<T>?
    /// Counts inner signals, so events of a replaced one still on their way are dropped.
    private var generation = 0
    private var innerActive = false
    private var outerCompleted = false

    init(_ downstream: any Subscriber<T>) {
        output = SerializedOutput(downstream)
    }

    func start(_ outer: Signal<Signal<T>>) {
        output.lock.withLock {
            _ = outer.subscribe(output.member { [self] event in onOuter(event) })
        }
    }

    /// Called with the lock held, as is `onInner`.
    private func onOuter(_ event: Event<Signal<T>>) {
        switch event {
        case .next(let inner):
            current?.cancel()
            generation += 1
            innerActive = true
            let mine = generation
            let sink = output.member { [self] (event: Event<T>) in onInner(event, generation: mine) }
            current = sink
            inner.subscribe(sink)
        case .error(let error):
            output.sendError(error)
        case .completed:
            outerCompleted = true
            if !innerActive { output.sendCompleted() }
        }
    }

    private func onInner(_ event: Event<T>, generation: Int) {
        guard generation == self.generation else { return }
        switch event {
        case .next(let value):
            output.sendNext(value)
        case .error(let error):
            output.sendError(error)
        case .completed:
            innerActive = false
            current = nil
            if outerCompleted { output.sendCompleted() }
        }
    }
}
