extension Signal {
    /// Sends this signal's values, then, once it completes, subscribes to `other` and sends
    /// its events (ReactiveCocoa's `concat:`).
    ///
    /// - Completion: when `other` completes.
    /// - Error: an error from this signal is sent at once and `other` is never subscribed;
    ///   an error from `other` is sent.
    /// - Disposal: disposing the result disposes whichever subscription is live.
    public func concat(_ other: Signal<Value>) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -concat: \(other)") { downstream in
            source.subscribe(ConcatSink(downstream: downstream, next: other))
        }
    }
}

/// Forwards the first signal's events and, at its completion, subscribes the downstream to
/// the next signal. The two subscriptions never overlap, so no lock is needed.
private final class ConcatSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let next: Signal<Value>

    init(downstream: any Subscriber<Value>, next: Signal<Value>) {
        self.downstream = downstream
        self.next = next
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }
    func sendNext(_ value: Value) { downstream.sendNext(value) }
    func sendError(_ error: any Error) { downstream.sendError(error) }

    func sendCompleted() {
        // The downstream links the new subscription into the chain's disposable itself.
        next.subscribe(downstream)
    }
}
