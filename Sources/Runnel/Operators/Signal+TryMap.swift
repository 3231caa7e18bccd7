extension Signal {
    /// Sends `transform` applied to each value; when `transform` throws, sends that error
    /// instead (ReactiveCocoa's `tryMap:`).
    ///
    /// - Completion: with this signal.
    /// - Error: the error thrown by `transform`, after which this signal is disposed and
    ///   nothing more is sent; or this signal's error.
    public func tryMap<U: Sendable>(_ transform: @escaping @Sendable (Value) throws -> U) -> Signal<U> {
        SinkSignal(name: SignalNames.enabled ? "[\(name)] -tryMap:" : "", source: self) { downstream in
            TryMapSink(downstream: downstream, transform: transform)
        }
    }
}

private final class TryMapSink<Value: Sendable, U: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<U>
    private let transform: @Sendable (Value) throws -> U
    private var upstream: CompoundDisposable?
    /// Read per value: a subscriber's events never overlap (the library's contract), so the
    /// run-time exclusivity check would guard nothing.
    @exclusivity(unchecked) private var terminated = false

    init(downstream: any Subscriber<U>, transform: @escaping @Sendable (Value) throws -> U) {
        self.downstream = downstream
        self.transform = transform
    }

    func didSubscribe(with disposable: CompoundDisposable) {
        upstream = disposable
        downstream.didSubscribe(with: disposable)
    }

    func sendNext(_ value: Value) {
        guard !terminated else { return }
        let result: U
        do {
            result = try transform(value)
        } catch {
            terminated = true
            upstream?.dispose()
            downstream.sendError(error)
            return
        }
        downstream.sendNext(result)
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
}
