extension Signal {
    /// Turns `Event` values back into events (ReactiveCocoa's `dematerialize`): a `.next`
    /// value is sent as a value, `.error` as the error, `.completed` as completion.
    ///
    /// - Completion: at a `.completed` value, or when this signal completes.
    /// - Error: at an `.error` value, or when this signal errs. Either way this signal is
    ///   disposed once the result terminates.
    public func dematerialize<T: Sendable>() -> Signal<T> where Value == Event<T> {
        let source = self
        return Signal<T>.operatorSignal(name: "[\(source.name)] -dematerialize") { downstream in
            source.subscribe(DematerializeSink(downstream: downstream))
        }
    }
}

private final class DematerializeSink<T: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<T>
    private var upstream: CompoundDisposable?
    private var terminated = false

    init(downstream: any Subscriber<T>) { self.downstream = downstream }

    func didSubscribe(with disposable: CompoundDisposable) {
        upstream = disposable
        downstream.didSubscribe(with: disposable)
    }

    func sendNext(_ event: Event<T>) {
        guard !terminated else { return }
        switch event {
        case .next(let value):
            downstream.sendNext(value)
        case .error(let error):
            terminate()
            downstream.sendError(error)
        case .completed:
            terminate()
            downstream.sendCompleted()
        }
    }

    func sendError(_ error: any Error) {
        guard !terminated else { return }
        terminated = true
        downstream.sendError(error)
    }

    func sendCompleted() {
        guard !terminated else { return }
        terminated = true
        downstream.sendCompleted()
    }

    /// Ends early: the source is disposed and whatever it sends afterwards is ignored.
    private func terminate() {
        terminated = true
        upstream?.dispose()
    }
}
