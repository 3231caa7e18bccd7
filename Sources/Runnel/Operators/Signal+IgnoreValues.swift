extension Signal {
    /// Sends no value, only this signal's completion or error (ReactiveCocoa's
    /// `ignoreValues`).
    public func ignoreValues() -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -ignoreValues") { downstream in
            source.subscribe(IgnoreValuesSink(downstream: downstream))
        }
    }
}

private final class IgnoreValuesSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>

    init(downstream: any Subscriber<Value>) { self.downstream = downstream }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }
    func sendNext(_ value: Value) {}
    func sendError(_ error: any Error) { downstream.sendError(error) }
    func sendCompleted() { downstream.sendCompleted() }
}
