extension Signal {
    /// Ignores this signal's values; once it completes, subscribes to the signal `block`
    /// returns and sends on its events (ReactiveCocoa's `then:`).
    ///
    /// `block` runs once per subscription, only after completion. An error from this signal is
    /// sent on and `block` never runs. Disposing the result disposes whichever signal is
    /// subscribed.
    public func then<U: Sendable>(_ block: @escaping @Sendable () -> Signal<U>) -> Signal<U> {
        Signal<U>.operatorSignal(name: "[\(self.name)] -then:") { downstream in
            self.subscribe(ThenSink<Value, U>(downstream: downstream, block: block))
        }
    }
}

/// Drops values and, on completion, hands the downstream to the next signal. The two
/// signals never overlap (the next is subscribed after the first's last event), so no lock.
final class ThenSink<Value: Sendable, U: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<U>
    private let block: @Sendable () -> Signal<U>

    init(downstream: any Subscriber<U>, block: @escaping @Sendable () -> Signal<U>) {
        self.downstream = downstream
        self.block = block
    }

    func sendNext(_ value: Value) {}
    func sendError(_ error: any Error) { downstream.sendError(error) }
    /// The next subscription links itself into the downstream's disposable.
    func sendCompleted() { block().subscribe(downstream) }
    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }
}
