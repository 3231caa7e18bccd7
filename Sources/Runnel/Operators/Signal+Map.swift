extension Signal {
    /// Sends `transform` applied to each value (ReactiveCocoa's `map:`).
    ///
    /// Completes and errs with this signal. `transform` runs on the thread the value arrives
    /// on, one value at a time.
    public func map<U: Sendable>(_ transform: @escaping @Sendable (Value) -> U) -> Signal<U> {
        SinkSignal(name: SignalNames.enabled ? "[\(name)] -map:" : "", source: self) { downstream in
            MapSink(downstream: downstream, transform: transform)
        }
    }
}

/// Forwards each value transformed, and the terminal event as it is.
final class MapSink<Value: Sendable, U: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<U>
    private let transform: @Sendable (Value) -> U

    init(downstream: any Subscriber<U>, transform: @escaping @Sendable (Value) -> U) {
        self.downstream = downstream
        self.transform = transform
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }
    func sendNext(_ value: Value) { downstream.sendNext(transform(value)) }
    func sendError(_ error: any Error) { downstream.sendError(error) }
    func sendCompleted() { downstream.sendCompleted() }
}
