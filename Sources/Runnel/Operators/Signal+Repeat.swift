extension Signal {
    /// Subscribes again each time this signal completes, forever (ReactiveCocoa's `repeat`).
    ///
    /// Values pass through; the result never completes. An error is sent on and ends it.
    /// Disposal stops the resubscribing. A source that completes synchronously is
    /// resubscribed in a loop, not by recursion, so the stack does not grow.
    public func `repeat`() -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -repeat") { downstream in
            ResubscribingSink(source: source, downstream: downstream, onCompleted: true, retries: nil).start()
        }
    }

    /// Subscribes again each time this signal fails, forever (ReactiveCocoa's `retry`).
    ///
    /// Values pass through; completion is sent on and ends it. Disposal stops the
    /// resubscribing. Synchronous failures are retried in a loop, not by recursion.
    public func retry() -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -retry") { downstream in
            ResubscribingSink(source: source, downstream: downstream, onCompleted: false, retries: nil).start()
        }
    }

    /// Subscribes again when this signal fails, at most `count` times (ReactiveCocoa's
    /// `retry:`); the error after the last retry is sent on. Completion is sent on.
    public func retry(_ count: Int) -> Signal<Value> {
        precondition(count >= 0, "retry count must be >= 0")
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -retry: \(count)") { downstream in
            ResubscribingSink(source: source, downstream: downstream, onCompleted: false, retries: count).start()
        }
    }
}

/// Resubscribes to `source` on completion (`repeat`) or on error (`retry`).
///
/// Each upstream subscription starts only after the previous one terminated, so events stay
/// serialised without a lock of their own; the small lock only runs the trampoline.
final class ResubscribingSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let source: Signal<Value>
    private let downstream: any Subscriber<Value>
    /// Resubscribe on completion (repeat) rather than on error (retry).
    private let onCompleted: Bool
    /// Guarded by `lock`: retries left, nil for unlimited.
    private var retriesLeft: Int?
    /// The current upstream subscription; disposing it stops everything.
    private let current = SerialDisposable()
    private let lock = Lock()
    /// Guarded by `lock`: a subscribe call is on the stack, and whether one more was asked
    /// for meanwhile (a synchronous source terminated inside it).
    private var subscribing = false
    private var again = false

    init(source: Signal<Value>, downstream: any Subscriber<Value>, onCompleted: Bool, retries: Int?) {
        self.source = source
        self.downstream = downstream
        self.onCompleted = onCompleted
        self.retriesLeft = retries
    }

    /// Subscribes to the source; returns what disposes the whole chain.
    func start() -> Disposable {
        // Linked into the chain first: a synchronous source loops inside `resubscribe`, and a
        // downstream disposing meanwhile must reach `current` to stop it.
        downstream.didSubscribe(with: CompoundDisposable([current]))
        resubscribe()
        return current
    }

    private func resubscribe() {
        let nested: Bool = lock.withLock {
            if subscribing {
                again = true
                return true
            }
            subscribing = true
            return false
        }
        if nested { return }
        while !current.isDisposed {
            // `didSubscribe` stores the new subscription in `current` before any event.
            source.subscribe(self)
            let loop: Bool = lock.withLock {
                if again {
                    again = false
                    return true
                }
                subscribing = false
                return false
            }
            if !loop { return }
        }
        lock.withLock { subscribing = false }
    }

    func didSubscribe(with disposable: CompoundDisposable) { current.inner = disposable }

    func sendNext(_ value: Value) { downstream.sendNext(value) }

    func sendError(_ error: any Error) {
        guard !onCompleted else {
            downstream.sendError(error)
            return
        }
        let retry: Bool = lock.withLock {
            guard let left = retriesLeft else { return true }
            guard left > 0 else { return false }
            retriesLeft = left - 1
            return true
        }
        if retry { resubscribe() } else { downstream.sendError(error) }
    }

    func sendCompleted() {
        if onCompleted { resubscribe() } else { downstream.sendCompleted() }
    }
}
