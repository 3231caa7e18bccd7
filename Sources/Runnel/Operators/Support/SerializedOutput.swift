/// The downstream end of an operator that merges several sources: the operator's one lock,
/// around its state and everything it sends, and the group of its source subscriptions.
///
/// Thread rules: the sending methods, and `isTerminated`, must be called with `lock` held.
/// The lock is recursive because a downstream subscriber may feed an event back into the
/// operator on the same thread (through a subject), as ReactiveCocoa's `@synchronized` allows.
/// Once a terminal event is sent nothing more is, and every source is disposed.
///
/// Lifetime: the group is linked into the downstream subscription at creation, so disposing
/// the subscription disposes every source, even while the operator is still subscribing them.
final class SerializedOutput<Value: Sendable>: @unchecked Sendable {
    let lock = Lock(recursive: true)
    /// Every live source subscription of this operator.
    let group = CompoundDisposable()
    private let downstream: any Subscriber<Value>
    /// Guarded by `lock`.
    private(set) var isTerminated = false

    init(_ downstream: any Subscriber<Value>) {
        self.downstream = downstream
        downstream.didSubscribe(with: group)
    }

    /// Whether the operator should stop: terminated, or its subscription disposed.
    var isStopped: Bool { isTerminated || group.isDisposed }

    func sendNext(_ value: Value) {
        guard !isStopped else { return }
        downstream.sendNext(value)
    }

    func sendError(_ error: any Error) {
        guard !isStopped else { return }
        isTerminated = true
        downstream.sendError(error)
        group.dispose()
    }

    func sendCompleted() {
        guard !isStopped else { return }
        isTerminated = true
        downstream.sendCompleted()
        group.dispose()
    }

    /// Sends `event` on.
    func send(_ event: Event<Value>) {
        switch event {
        case .next(let value): sendNext(value)
        case .error(let error): sendError(error)
        case .completed: sendCompleted()
        }
    }

    /// A sink for one source whose events `handler` gets with `lock` held, and only while
    /// the operator has not stopped.
    func member<T: Sendable>(_ handler: @escaping @Sendable (Event<T>) -> Void) -> MemberSink<T> {
        MemberSink(group: group) { [self] event in
            lock.lock()
            defer { lock.unlock() }
            guard !isStopped else { return }
            handler(event)
        }
    }
}
