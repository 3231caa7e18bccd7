extension Signal {
    /// Runs `action` for each value, before sending it on (ReactiveCocoa's `doNext:`).
    /// Completion and errors pass through unchanged.
    public func doNext(_ action: @escaping @Sendable (Value) -> Void) -> Signal<Value> {
        sideEffect(name: "doNext:", next: action, error: nil, completed: nil)
    }

    /// Runs `action` with the error, before sending it on (ReactiveCocoa's `doError:`).
    public func doError(_ action: @escaping @Sendable (any Error) -> Void) -> Signal<Value> {
        sideEffect(name: "doError:", next: nil, error: action, completed: nil)
    }

    /// Runs `action` on completion, before sending it on (ReactiveCocoa's `doCompleted:`).
    public func doCompleted(_ action: @escaping @Sendable () -> Void) -> Signal<Value> {
        sideEffect(name: "doCompleted:", next: nil, error: nil, completed: action)
    }

    /// Runs `action` when this signal errs or completes, before the terminal event is sent on
    /// (ReactiveCocoa's `finally:`). It does not run when the subscription is disposed early.
    public func finally(_ action: @escaping @Sendable () -> Void) -> Signal<Value> {
        sideEffect(name: "finally:", next: nil, error: { _ in action() }, completed: action)
    }

    /// Runs `action` at each subscription, before subscribing to this signal (ReactiveCocoa's
    /// `initially:`).
    public func initially(_ action: @escaping @Sendable () -> Void) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -initially:") { downstream in
            action()
            return source.subscribe(downstream)
        }
    }

    func sideEffect(
        name: String, next: (@Sendable (Value) -> Void)?, error: (@Sendable (any Error) -> Void)?,
        completed: (@Sendable () -> Void)?
    ) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -\(name)") { downstream in
            source.subscribe(SideEffectSink(downstream: downstream, next: next, error: error, completed: completed))
        }
    }
}

/// Runs the given actions, then forwards each event.
final class SideEffectSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let next: (@Sendable (Value) -> Void)?
    private let error: (@Sendable (any Error) -> Void)?
    private let completed: (@Sendable () -> Void)?

    init(
        downstream: any Subscriber<Value>, next: (@Sendable (Value) -> Void)?,
        error: (@Sendable (any Error) -> Void)?, completed: (@Sendable () -> Void)?
    ) {
        self.downstream = downstream
        self.next = next
        self.error = error
        self.completed = completed
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        next?(value)
        downstream.sendNext(value)
    }

    func sendError(_ error: any Error) {
        self.error?(error)
        downstream.sendError(error)
    }

    func sendCompleted() {
        completed?()
        downstream.sendCompleted()
    }
}
