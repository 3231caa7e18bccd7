extension Signal {
    /// Drops the first `count` values and sends the rest (ReactiveCocoa's `skip:`).
    ///
    /// Completes and errs with this signal, whether or not `count` values were dropped.
    public func skip(_ count: Int) -> Signal<Value> {
        precondition(count >= 0, "skip count must be >= 0")
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -skip: \(count)") { downstream in
            source.subscribe(SkipSink(downstream: downstream, count: count))
        }
    }
}

private final class SkipSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private var remaining: Int

    init(downstream: any Subscriber<Value>, count: Int) {
        self.downstream = downstream
        self.remaining = count
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        if remaining > 0 {
            remaining -= 1
        } else {
            downstream.sendNext(value)
        }
    }

    func sendError(_ error: any Error) { downstream.sendError(error) }
    func sendCompleted() { downstream.sendCompleted() }
}
