extension Signal {
    /// At each value of `sampler`, sends the latest value of this signal, again even if it has
    /// not changed; nothing for sampler values that come before this signal's first value
    /// (ReactiveCocoa's `sample:`).
    ///
    /// Completes when either signal completes, as ReactiveCocoa does. An error from either is
    /// sent on and disposes the other. Disposing the result disposes both.
    public func sample<U: Sendable>(_ sampler: Signal<U>) -> Signal<Value> {
        Signal.operatorSignal(name: "[\(self.name)] -sample: \(sampler)") { downstream in
            SampleState<Value, U>(downstream).start(self, sampler)
            return nil
        }
    }
}

/// The state of one `sample` subscription, guarded by the output's lock.
final class SampleState<Value: Sendable, U: Sendable>: @unchecked Sendable {
    private let output: SerializedOutput<Value>
    private var latest: Value?

    init(_ downstream: any Subscriber<Value>) {
        output = SerializedOutput(downstream)
    }

    func start(_ source: Signal<Value>, _ sampler: Signal<U>) {
        output.lock.withLock {
            source.subscribe(output.member { [self] (event: Event<Value>) in onSource(event) })
            if output.isStopped { return }
            sampler.subscribe(output.member { [self] (event: Event<U>) in onSampler(event) })
        }
    }

    /// Called with the lock held, as is `onSampler`.
    private func onSource(_ event: Event<Value>) {
        switch event {
        case .next(let value): latest = value
        case .error(let error): output.sendError(error)
        case .completed: output.sendCompleted()
        }
    }

    private func onSampler(_ event: Event<U>) {
        switch event {
        case .next:
            if let latest { output.sendNext(latest) }
        case .error(let error): output.sendError(error)
        case .completed: output.sendCompleted()
        }
    }
}
