extension Signal {
    /// Sends every value of this signal as one array when it completes (ReactiveCocoa's
    /// `collect`).
    ///
    /// - Completion: sends the array (empty when there were no values), then completes.
    /// - Error: sends the error; the values collected are dropped unsent.
    /// - Memory: holds every value until termination, then releases them.
    public func collect() -> Signal<[Value]> {
        let source = self
        return Signal<[Value]>.operatorSignal(name: "[\(source.name)] -collect") { downstream in
            source.subscribe(CollectSink(downstream: downstream))
        }
    }
}

/// Appends values in place (no copy per value) and sends the array at completion.
private final class CollectSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<[Value]>
    private var values: [Value] = []
    private var terminated = false

    init(downstream: any Subscriber<[Value]>) { self.downstream = downstream }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        guard !terminated else { return }
        values.append(value)
    }

    func sendError(_ error: any Error) {
        terminated = true
        values = []
        downstream.sendError(error)
    }

    func sendCompleted() {
        guard !terminated else { return }
        terminated = true
        let result = values
        values = []
        downstream.sendNext(result)
        downstream.sendCompleted()
    }
}
