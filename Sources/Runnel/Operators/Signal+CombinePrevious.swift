extension Signal {
    /// Sends `reduce(previous, current)` for each value, `previous` being the value before it,
    /// or `start` for the first one (ReactiveCocoa's `combinePreviousWithStart:reduce:`).
    ///
    /// Completes and errs with this signal.
    public func combinePrevious<U: Sendable>(
        start: Value, reduce: @escaping @Sendable (_ previous: Value, _ current: Value) -> U
    ) -> Signal<U> {
        let source = self
        return Signal<U>.operatorSignal(name: "[\(source.name)] -combinePreviousWithStart:reduce:") { downstream in
            source.subscribe(CombinePreviousSink(downstream: downstream, start: start, reduce: reduce))
        }
    }
}

/// Remembers the last value and sends it combined with the next.
private final class CombinePreviousSink<Value: Sendable, U: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<U>
    private let reduce: @Sendable (Value, Value) -> U
    private var previous: Value

    init(downstream: any Subscriber<U>, start: Value, reduce: @escaping @Sendable (Value, Value) -> U) {
        self.downstream = downstream
        self.previous = start
        self.reduce = reduce
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        let combined = reduce(previous, value)
        previous = value
        downstream.sendNext(combined)
    }

    func sendError(_ error: any Error) { downstream.sendError(error) }
    func sendCompleted() { downstream.sendCompleted() }
}
