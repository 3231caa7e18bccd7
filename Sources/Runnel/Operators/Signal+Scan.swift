extension Signal {
    /// Sends the running result of combining each value into an accumulator that starts at
    /// `start` (ReactiveCocoa's `scanWithStart:reduce:`). Each subscription starts afresh.
    ///
    /// Completes and errs with this signal; `start` itself is not sent.
    public func scan<U: Sendable>(
        start: U, reduce: @escaping @Sendable (_ running: U, _ next: Value) -> U
    ) -> Signal<U> {
        scan(start: start) { running, next, _ in reduce(running, next) }.named("[\(name)] -scanWithStart:reduce:")
    }

    /// Like `scan(start:reduce:)`, also handing `reduce` the zero-based index of the value
    /// (ReactiveCocoa's `scanWithStart:reduceWithIndex:`).
    ///
    /// Completes and errs with this signal; `start` itself is not sent.
    public func scan<U: Sendable>(
        start: U, reduceWithIndex reduce: @escaping @Sendable (_ running: U, _ next: Value, _ index: Int) -> U
    ) -> Signal<U> {
        let source = self
        return Signal<U>.operatorSignal(name: "[\(source.name)] -scanWithStart:reduceWithIndex:") { downstream in
            source.subscribe(ScanSink(downstream: downstream, start: start, reduce: reduce))
        }
    }
}

/// Folds each value into `running` and sends the result. Events are serialised upstream, so
/// the state needs no lock.
private final class ScanSink<Value: Sendable, U: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<U>
    private let reduce: @Sendable (U, Value, Int) -> U
    private var running: U
    private var index = 0

    init(downstream: any Subscriber<U>, start: U, reduce: @escaping @Sendable (U, Value, Int) -> U) {
        self.downstream = downstream
        self.running = start
        self.reduce = reduce
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        running = reduce(running, value, index)
        index += 1
        downstream.sendNext(running)
    }

    func sendError(_ error: any Error) { downstream.sendError(error) }
    func sendCompleted() { downstream.sendCompleted() }
}
