extension Signal {
    /// Sends values until one satisfies `predicate`, then completes without sending that one
    /// (ReactiveCocoa's `takeUntilBlock:`).
    ///
    /// - Completion: at the first value satisfying `predicate` (this signal is then
    ///   disposed), or when this signal completes.
    /// - Error: with this signal, if it errs first.
    public func take(until predicate: @escaping @Sendable (Value) -> Bool) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -takeUntilBlock:") { downstream in
            source.subscribe(TakeUntilPredicateSink(downstream: downstream, predicate: predicate))
        }
    }

    /// Sends values while they satisfy `predicate`, completing at the first that does not,
    /// without sending it (ReactiveCocoa's `takeWhileBlock:`).
    ///
    /// - Completion: at the first value failing `predicate` (this signal is then disposed), or
    ///   when this signal completes.
    /// - Error: with this signal, if it errs first.
    public func take(while predicate: @escaping @Sendable (Value) -> Bool) -> Signal<Value> {
        take(until: { !predicate($0) }).named("[\(name)] -takeWhileBlock:")
    }
}

private final class TakeUntilPredicateSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let predicate: @Sendable (Value) -> Bool
    private var upstream: CompoundDisposable?
    private var terminated = false

    init(downstream: any Subscriber<Value>, predicate: @escaping @Sendable (Value) -> Bool) {
        self.downstream = downstream
        self.predicate = predicate
    }

    func didSubscribe(with disposable: CompoundDisposable) {
        upstream = disposable
        downstream.didSubscribe(with: disposable)
    }

    func sendNext(_ value: Value) {
        guard !terminated else { return }
        if predicate(value) {
            terminated = true
            upstream?.dispose()
            downstream.sendCompleted()
        } else {
            downstream.sendNext(value)
        }
    }

    func sendError(_ error: any Error) {
        guard !terminated else { return }
        terminated = true
        downstream.sendError(error)
    }

    func sendCompleted() {
        guard !terminated else { return }
        terminated = true
        downstream.sendCompleted()
    }
}
