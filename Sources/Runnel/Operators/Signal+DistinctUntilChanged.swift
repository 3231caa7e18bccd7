extension Signal where Value: Equatable {
    /// Sends each value that differs from the one before it; the first value is always sent
    /// (ReactiveCocoa's `distinctUntilChanged`).
    ///
    /// Completes and errs with this signal.
    public func distinctUntilChanged() -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -distinctUntilChanged") { downstream in
            source.subscribe(DistinctUntilChangedSink(downstream: downstream))
        }
    }
}

private final class DistinctUntilChangedSink<Value: Sendable & Equatable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private var last: Value?

    init(downstream: any Subscriber<Value>) { self.downstream = downstream }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        if let last, last == value { return }
        last = value
        downstream.sendNext(value)
    }

    func sendError(_ error: any Error) {
        last = nil
        downstream.sendError(error)
    }

    func sendCompleted() {
        last = nil
        downstream.sendCompleted()
    }
}
