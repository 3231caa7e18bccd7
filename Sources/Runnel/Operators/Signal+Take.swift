extension Signal {
    /// Sends the first `count` values, then completes (ReactiveCocoa's `take:`).
    ///
    /// - Completion: right after the `count`th value, when this signal is disposed; or when
    ///   this signal completes first. `take(0)` completes at once without subscribing.
    /// - Error: with this signal, if it errs before `count` values.
    public func take(_ count: Int) -> Signal<Value> {
        precondition(count >= 0, "take count must be >= 0")
        guard count > 0 else { return Signal.empty.named("[\(name)] -take: 0") }
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -take: \(count)") { downstream in
            source.subscribe(TakeSink(downstream: downstream, count: count))
        }
    }
}

/// Counts values down and ends the subscription early at zero.
private final class TakeSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private var remaining: Int
    private var upstream: CompoundDisposable?

    init(downstream: any Subscriber<Value>, count: Int) {
        self.downstream = downstream
        self.remaining = count
    }

    func didSubscribe(with disposable: CompoundDisposable) {
        upstream = disposable
        downstream.didSubscribe(with: disposable)
    }

    func sendNext(_ value: Value) {
        guard remaining > 0 else { return }
        remaining -= 1
        downstream.sendNext(value)
        if remaining == 0 {
            upstream?.dispose()
            downstream.sendCompleted()
        }
    }

    func sendError(_ error: any Error) {
        guard remaining > 0 else { return }
        remaining = 0
        downstream.sendError(error)
    }

    func sendCompleted() {
        guard remaining > 0 else { return }
        remaining = 0
        downstream.sendCompleted()
    }
}
