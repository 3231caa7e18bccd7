extension Signal {
    /// Drops values until one satisfies `predicate`, then sends that value and every value
    /// after it (ReactiveCocoa's `skipUntilBlock:`).
    ///
    /// Completes and errs with this signal.
    public func skip(until predicate: @escaping @Sendable (Value) -> Bool) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -skipUntilBlock:") { downstream in
            source.subscribe(SkipUntilPredicateSink(downstream: downstream, predicate: predicate))
        }
    }

    /// Drops values while they satisfy `predicate`, then sends the first that does not and
    /// every value after it (ReactiveCocoa's `skipWhileBlock:`).
    ///
    /// Completes and errs with this signal.
    public func skip(while predicate: @escaping @Sendable (Value) -> Bool) -> Signal<Value> {
        skip(until: { !predicate($0) }).named("[\(name)] -skipWhileBlock:")
    }
}

private final class SkipUntilPredicateSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    /// Released once a value has passed: it is never asked again.
    private var predicate: (@Sendable (Value) -> Bool)?

    init(downstream: any Subscriber<Value>, predicate: @escaping @Sendable (Value) -> Bool) {
        self.downstream = downstream
        self.predicate = predicate
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        if let predicate {
            guard predicate(value) else { return }
            self.predicate = nil
        }
        downstream.sendNext(value)
    }

    func sendError(_ error: any Error) { downstream.sendError(error) }
    func sendCompleted() { downstream.sendCompleted() }
}
