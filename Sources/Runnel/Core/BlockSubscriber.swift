/// A subscriber made of three blocks (ReactiveCocoa's `RACSubscriber`).
///
/// Thread-safe: it serialises its own events with a recursive lock, so one block subscriber
/// may be handed to several signals. After a terminal event, or once `disposable` is disposed,
/// no block runs again: a dispose that returns has waited for a block running on another
/// thread. A terminal event disposes every subscription it was handed; a subscription that
/// ends on its own is purged from `disposable`, so a long-lived subscriber does not grow.
public final class BlockSubscriber<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let lock = Lock(recursive: true)
    /// Guarded by `lock`. Kept apart from the subscriber so that `disposable` can clear it
    /// without referring back to the subscriber (a weak reference would move the
    /// subscriber's reference counts to a slow side table, on the per-value path).
    private let blocks: Blocks<Value>

    /// Holds every subscription this subscriber was handed. Disposing it stops the subscriber.
    public let disposable: CompoundDisposable

    public init(
        next: (@Sendable (Value) -> Void)? = nil,
        error: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil
    ) {
        let blocks = Blocks(next: next, error: error, completed: completed)
        self.blocks = blocks
        self.disposable = CompoundDisposable()
        let lock = self.lock
        disposable.add(Disposable { lock.withLock { blocks.clear() } })
    }

    public func sendNext(_ value: Value) {
        lock.lock()
        blocks.next(value)
        lock.unlock()
    }

    public func sendError(_ error: any Error) {
        lock.lock()
        defer { lock.unlock() }
        guard !blocks.stopped else { return }
        let block = blocks.error
        stop()
        block?(error)
    }

    public func sendCompleted() {
        lock.lock()
        defer { lock.unlock() }
        guard !blocks.stopped else { return }
        let block = blocks.completed
        stop()
        block?()
    }

    /// Drops the blocks and disposes every subscription (called with the lock held).
    private func stop() {
        blocks.clear()
        disposable.dispose()
    }

    public func didSubscribe(with other: CompoundDisposable) {
        guard !other.isDisposed else { return }
        disposable.add(other)
        // Purge the subscription when it ends, so `disposable` does not grow without bound.
        other.add(PurgeDisposable(parent: disposable, child: other))
    }
}

/// Removes `child` from `parent` when disposed; holds neither strongly, so no cycle is made.
final class PurgeDisposable: Disposable, @unchecked Sendable {
    private weak var parent: CompoundDisposable?
    private unowned(unsafe) let child: CompoundDisposable

    init(parent: CompoundDisposable, child: CompoundDisposable) {
        self.parent = parent
        self.child = child
        super.init()
    }

    override func dispose() {
        guard markDisposed() else { return }
        parent?.remove(child)
    }
}

/// A block subscriber's blocks, guarded by its lock. Once stopped, no block runs again and
/// the blocks are released. `next` is not optional so that the per-value path forms no
/// generic type (each costs a runtime metadata lookup in unspecialised code); a stopped
/// subscriber holds a no-op.
final class Blocks<Value: Sendable>: @unchecked Sendable {
    private(set) var stopped = false
    private(set) var next: @Sendable (Value) -> Void
    private(set) var error: (@Sendable (any Error) -> Void)?
    private(set) var completed: (@Sendable () -> Void)?

    init(
        next: (@Sendable (Value) -> Void)?, error: (@Sendable (any Error) -> Void)?,
        completed: (@Sendable () -> Void)?
    ) {
        self.next = next ?? { _ in }
        self.error = error
        self.completed = completed
    }

    func clear() {
        stopped = true
        next = { _ in }
        error = nil
        completed = nil
    }
}
