extension Signal {
    /// Sends true and completes at the first value; sends false and completes if this signal
    /// ends without one (ReactiveCocoa's `any`).
    ///
    /// - Completion: always, after the one value.
    /// - Error: never sent. As in ReactiveCocoa, an error of this signal before any value
    ///   ends the result with false, then completion.
    public func any() -> Signal<Bool> {
        any { _ in true }.named("[\(name)] -any")
    }

    /// Sends true and completes at the first value satisfying `predicate` (this signal is
    /// then disposed); sends false and completes if this signal ends without one
    /// (ReactiveCocoa's `any:`).
    ///
    /// - Completion: always, after the one value.
    /// - Error: never sent. As in ReactiveCocoa, an error of this signal before a match ends
    ///   the result with false, then completion.
    public func any(_ predicate: @escaping @Sendable (Value) -> Bool) -> Signal<Bool> {
        let source = self
        return Signal<Bool>.operatorSignal(name: "[\(source.name)] -any:") { downstream in
            source.subscribe(QuantifierSink(downstream: downstream, predicate: predicate, decisiveResult: true))
        }
    }

    /// Sends true and completes if every value satisfies `predicate` (true for no values);
    /// sends false and completes at the first that does not, disposing this signal
    /// (ReactiveCocoa's `all:`).
    ///
    /// - Completion: always, after the one value.
    /// - Error: never sent. As in ReactiveCocoa, an error of this signal ends the result
    ///   with false, then completion.
    public func all(_ predicate: @escaping @Sendable (Value) -> Bool) -> Signal<Bool> {
        let source = self
        return Signal<Bool>.operatorSignal(name: "[\(source.name)] -all:") { downstream in
            source.subscribe(
                QuantifierSink(downstream: downstream, predicate: { !predicate($0) }, decisiveResult: false))
        }
    }
}

/// Decides `any` and `all`: sends `decisiveResult` at the first value satisfying `predicate`,
/// or the opposite when the source completes without one. An error counts as false.
private final class QuantifierSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Bool>
    private let predicate: @Sendable (Value) -> Bool
    private let decisiveResult: Bool
    private var upstream: CompoundDisposable?
    private var terminated = false

    init(downstream: any Subscriber<Bool>, predicate: @escaping @Sendable (Value) -> Bool, decisiveResult: Bool) {
        self.downstream = downstream
        self.predicate = predicate
        self.decisiveResult = decisiveResult
    }

    func didSubscribe(with disposable: CompoundDisposable) {
        upstream = disposable
        downstream.didSubscribe(with: disposable)
    }

    func sendNext(_ value: Value) {
        guard !terminated, predicate(value) else { return }
        upstream?.dispose()
        finish(decisiveResult)
    }

    func sendError(_ error: any Error) { finish(false) }
    func sendCompleted() { finish(!decisiveResult) }

    private func finish(_ result: Bool) {
        guard !terminated else { return }
        terminated = true
        downstream.sendNext(result)
        downstream.sendCompleted()
    }
}
