extension Signal {
    /// Sends only the values for which `isIncluded` returns true (ReactiveCocoa's `filter:`).
    ///
    /// Completes and errs with this signal.
    public func filter(_ isIncluded: @escaping @Sendable (Value) -> Bool) -> Signal<Value> {
        SinkSignal(name: SignalNames.enabled ? "[\(name)] -filter:" : "", source: self) { downstream in
            FilterSink(downstream: downstream, isIncluded: isIncluded)
        }
    }
}

/// Forwards the values that pass `isIncluded`, and the terminal event.
final class FilterSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let isIncluded: @Sendable (Value) -> Bool

    init(downstream: any Subscriber<Value>, isIncluded: @escaping @Sendable (Value) -> Bool) {
        self.downstream = downstream
        self.isIncluded = isIncluded
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        if isIncluded(value) { downstream.sendNext(value) }
    }

    func sendError(_ error: any Error) { downstream.sendError(error) }
    func sendCompleted() { downstream.sendCompleted() }
}
