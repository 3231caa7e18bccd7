extension Signal {
    /// Folds every value into an accumulator starting at `start` and sends the result once
    /// this signal completes (ReactiveCocoa's `aggregateWithStart:reduce:`).
    ///
    /// - Completion: sends the final accumulator (`start` when there were no values), then
    ///   completes.
    /// - Error: sends the error; the accumulator is dropped unsent.
    public func aggregate<U: Sendable>(
        start: U, reduce: @escaping @Sendable (_ running: U, _ next: Value) -> U
    ) -> Signal<U> {
        aggregate(startFactory: { start }, reduceWithIndex: { running, next, _ in reduce(running, next) })
            .named("[\(name)] -aggregateWithStart:reduce:")
    }

    /// Like `aggregate(start:reduce:)`, also handing `reduce` the zero-based index of the
    /// value (ReactiveCocoa's `aggregateWithStart:reduceWithIndex:`).
    public func aggregate<U: Sendable>(
        start: U, reduceWithIndex reduce: @escaping @Sendable (_ running: U, _ next: Value, _ index: Int) -> U
    ) -> Signal<U> {
        aggregate(startFactory: { start }, reduceWithIndex: reduce)
            .named("[\(name)] -aggregateWithStart:reduceWithIndex:")
    }

    /// Like `aggregate(start:reduce:)`, with a start value made anew by `startFactory` for
    /// each subscription (ReactiveCocoa's `aggregateWithStartFactory:reduce:`), so
    /// subscriptions never share a mutable start.
    public func aggregate<U: Sendable>(
        startFactory: @escaping @Sendable () -> U, reduce: @escaping @Sendable (_ running: U, _ next: Value) -> U
    ) -> Signal<U> {
        aggregate(startFactory: startFactory, reduceWithIndex: { running, next, _ in reduce(running, next) })
            .named("[\(name)] -aggregateWithStartFactory:reduce:")
    }

    private func aggregate<U: Sendable>(
        startFactory: @escaping @Sendable () -> U, reduceWithIndex reduce: @escaping @Sendable (U, Value, Int) -> U
    ) -> Signal<U> {
        let source = self
        return Signal<U>.operatorSignal { downstream in
            source.subscribe(AggregateSink(downstream: downstream, start: startFactory(), reduce: reduce))
        }
    }
}

/// Folds values into `running` and sends it at completion. The accumulator is released at
/// termination.
private final class AggregateSink<Value: Sendable, U: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<U>
    private let reduce: @Sendable (U, Value, Int) -> U
    /// Nil once terminated.
    private var running: U?
    private var index = 0

    init(downstream: any Subscriber<U>, start: U, reduce: @escaping @Sendable (U, Value, Int) -> U) {
        self.downstream = downstream
        self.running = start
        self.reduce = reduce
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        guard let current = running else { return }
        running = reduce(current, value, index)
        index += 1
    }

    func sendError(_ error: any Error) {
        running = nil
        downstream.sendError(error)
    }

    func sendCompleted() {
        guard let result = running else { return }
        running = nil
        downstream.sendNext(result)
        downstream.sendCompleted()
    }
}
