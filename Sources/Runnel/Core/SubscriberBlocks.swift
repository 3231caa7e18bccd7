/// A block subscriber's blocks, its lock, and the subscriptions it was handed: the
/// subscriber's `disposable`, made one object so that a subscription costs few allocations.
///
/// Thread rules: every block runs holding `lock`, a recursive lock (blocks may send to the
/// subscriber again). Disposing takes the lock to clear the blocks, so it waits for a block
/// running on another thread, and no block runs after it. `next` is not optional so that
/// the per-value path forms no generic type (each costs a runtime metadata lookup in
/// unspecialised code); a stopped subscriber holds a no-op.
final class SubscriberBlocks<Value: Sendable>: CompoundDisposable, @unchecked Sendable {
    private let lock = RecursiveSpinLock()
    /// Guarded by `lock`, as are the blocks.
    private var stopped = false
    private var next: @Sendable (Value) -> Void
    private var error: (@Sendable (any Error) -> Void)?
    private var completed: (@Sendable () -> Void)?

    init(
        next: (@Sendable (Value) -> Void)?, error: (@Sendable (any Error) -> Void)?,
        completed: (@Sendable () -> Void)?
    ) {
        self.next = next ?? { _ in }
        self.error = error
        self.completed = completed
        super.init()
    }

    func sendNext(_ value: Value) {
        lock.lock()
        next(value)
        lock.unlock()
    }

    func sendError(_ error: any Error) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        let block = self.error
        stop()
        block?(error)
    }

    func sendCompleted() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        let block = completed
        stop()
        block?()
    }

    /// Clears the blocks and disposes every subscription (called holding the lock).
    private func stop() {
        clear()
        dispose()
    }

    /// Drops the blocks, so none runs again (called holding the lock).
    private func clear() {
        stopped = true
        next = { _ in }
        error = nil
        completed = nil
    }

    /// Stops the subscriber before its subscriptions are disposed.
    override func willDispose() {
        lock.lock()
        clear()
        lock.unlock()
    }
}
