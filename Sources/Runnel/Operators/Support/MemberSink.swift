/// Subscribes an operator that merges several sources (merge, zip, flatten...) to one of them.
///
/// It hands each event to `handler`, which belongs to the operator and takes the operator's
/// lock. Its subscription is added to the operator's `group` as soon as it starts, so
/// disposing the group disposes every source, and taken out again when the source terminates
/// or the operator cancels it, so a long-lived group does not grow with finished sources.
///
/// Thread rules: events come serialised from the source; `cancel()` may be called from any
/// thread. Only the subscription reference is shared, and a small lock guards it.
final class MemberSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let group: CompoundDisposable
    private let handler: @Sendable (Event<Value>) -> Void
    private let lock = Lock()
    /// Guarded by `lock`; nil before the subscription starts and after it ends.
    private var subscription: CompoundDisposable?
    /// Guarded by `lock`: cancelled before the subscription was handed over.
    private var cancelled = false

    init(group: CompoundDisposable, handler: @escaping @Sendable (Event<Value>) -> Void) {
        self.group = group
        self.handler = handler
    }

    func didSubscribe(with disposable: CompoundDisposable) {
        let alreadyCancelled: Bool = lock.withLock {
            if cancelled { return true }
            subscription = disposable
            return false
        }
        if alreadyCancelled {
            disposable.dispose()
        } else {
            group.add(disposable)
        }
    }

    func sendNext(_ value: Value) { handler(.next(value)) }

    func sendError(_ error: any Error) {
        release()
        handler(.error(error))
    }

    func sendCompleted() {
        release()
        handler(.completed)
    }

    /// Disposes this source's subscription and takes it out of the group.
    func cancel() {
        let current: CompoundDisposable? = lock.withLock {
            cancelled = true
            defer { subscription = nil }
            return subscription
        }
        guard let current else { return }
        group.remove(current)
        current.dispose()
    }

    /// The source ended on its own: its subscription disposes itself, so only forget it.
    private func release() {
        let current: CompoundDisposable? = lock.withLock {
            defer { subscription = nil }
            return subscription
        }
        if let current { group.remove(current) }
    }
}
