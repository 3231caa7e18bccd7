extension Signal {
    /// Sends each event of this signal, terminal ones included, as an `Event` value
    /// (ReactiveCocoa's `materialize`).
    ///
    /// - Completion: after sending `.completed` or `.error`, the result completes.
    /// - Error: never sends one; an error arrives as an `.error` value.
    public func materialize() -> Signal<Event<Value>> {
        let source = self
        return Signal<Event<Value>>.operatorSignal(name: "[\(source.name)] -materialize") { downstream in
            source.subscribe(MaterializeSink(downstream: downstream))
        }
    }
}

private final class MaterializeSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Event<Value>>

    init(downstream: any Subscriber<Event<Value>>) { self.downstream = downstream }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }
    func sendNext(_ value: Value) { downstream.sendNext(.next(value)) }

    func sendError(_ error: any Error) {
        downstream.sendNext(.error(error))
        downstream.sendCompleted()
    }

    func sendCompleted() {
        downstream.sendNext(.completed)
        downstream.sendCompleted()
    }
}
