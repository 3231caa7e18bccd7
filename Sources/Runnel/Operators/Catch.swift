extension Signal {
    /// Sends this signal's events, but on an error subscribes to the signal `handler` returns
    /// for it and continues with that one's events (ReactiveCocoa's `catch:`).
    ///
    /// Completion passes through. An error from the replacement signal is sent on. Disposing
    /// the result disposes whichever signal is subscribed.
    public func `catch`(_ handler: @escaping @Sendable (any Error) -> Signal<Value>) -> Signal<Value> {
        Signal.operatorSignal(name: "[\(self.name)] -catch:") { downstream in
            self.subscribe(CatchSink(downstream: downstream, handler: handler))
        }
    }

    /// On an error, continues with `signal` (ReactiveCocoa's `catchTo:`). As `catch`.
    public func catchTo(_ signal: Signal<Value>) -> Signal<Value> {
        self.catch { _ in signal }
    }
}

/// Forwards events and, on an error, hands the downstream to the replacement signal. The
/// signals never overlap (the replacement is subscribed after the failure), so no lock.
final class CatchSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let handler: @Sendable (any Error) -> Signal<Value>

    init(downstream: any Subscriber<Value>, handler: @escaping @Sendable (any Error) -> Signal<Value>) {
        self.downstream = downstream
        self.handler = handler
    }

    func sendNext(_ value: Value) { downstream.sendNext(value) }
    /// The replacement subscription links itself into the downstream's disposable.
    func sendError(_ error: any Error) { handler(error).subscribe(downstream) }
    func sendCompleted() { downstream.sendCompleted() }
    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }
}
