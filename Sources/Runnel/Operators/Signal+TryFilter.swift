extension Signal {
    /// Sends only the values for which `isIncluded` returns true; when it throws, sends that
    /// error instead. ReactiveCocoa 2.5 has `tryMap:` but no throwing `filter:`; this is the
    /// one-sink form of `tryMap` to a flag, `filter` on it and `map` back, for predicates that
    /// can fail (the server's `filter` stage evaluates an expression).
    ///
    /// - Completion: with this signal.
    /// - Error: the error thrown by `isIncluded`, after which this signal is disposed and
    ///   nothing more is sent; or this signal's error.
    public func tryFilter(_ isIncluded: @escaping @Sendable (Value) throws -> Bool) -> Signal<Value> {
        SinkSignal(name: SignalNames.enabled ? "[\(name)] -tryFilter:" : "", source: self) { downstream in
            TryFilterSink(downstream: downstream, isIncluded: isIncluded)
        }
    }
}

/// Forwards the values that pass `isIncluded`; a thrown error disposes the source and is sent
/// in its place.
final class TryFilterSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let isIncluded: @Sendable (Value) throws -> Bool
    private var upstream: CompoundDisposable?
    /// Read per value: a subscriber's events never overlap (the library's contract), so the
    /// run-time exclusivity check would guard nothing.
    @exclusivity(unchecked) private var terminated = false

    init(downstream: any Subscriber<Value>, isIncluded: @escaping @Sendable (Value) throws -> Bool) {
        self.downstream = downstream
        self.isIncluded = isIncluded
    }

    func didSubscribe(with disposable: CompoundDisposable) {
        upstream = disposable
        downstream.didSubscribe(with: disposable)
    }

    func sendNext(_ value: Value) {
        guard !terminated else { return }
        let passes: Bool
        do {
            passes = try isIncluded(value)
        } catch {
            terminated = true
            upstream?.dispose()
            downstream.sendError(error)
            return
        }
        if passes { downstream.sendNext(value) }
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
