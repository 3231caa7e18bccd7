extension Signal {
    /// Sends the last `count` values when this signal completes, then completes
    /// (ReactiveCocoa's `takeLast:`).
    ///
    /// - Completion: sends the values kept (fewer than `count` if fewer arrived), then
    ///   completes.
    /// - Error: sends the error; the values kept are dropped unsent.
    /// - Memory: keeps at most `count` values, released at termination.
    public func takeLast(_ count: Int) -> Signal<Value> {
        precondition(count >= 0, "takeLast count must be >= 0")
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -takeLast: \(count)") { downstream in
            source.subscribe(TakeLastSink(downstream: downstream, count: count))
        }
    }
}

private final class TakeLastSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private var kept: RingBuffer<Value>
    private var terminated = false

    init(downstream: any Subscriber<Value>, count: Int) {
        self.downstream = downstream
        self.kept = RingBuffer(capacity: count)
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        guard !terminated else { return }
        kept.append(value)
    }

    func sendError(_ error: any Error) {
        terminated = true
        kept.removeAll()
        downstream.sendError(error)
    }

    func sendCompleted() {
        guard !terminated else { return }
        terminated = true
        while let value = kept.popFirst() { downstream.sendNext(value) }
        kept.removeAll()
        downstream.sendCompleted()
    }
}
