/// A disposable that disposes many others together (ReactiveCocoa's `RACCompoundDisposable`).
///
/// Thread-safe. Adding to a disposed compound disposes the added one at once; `remove` takes
/// one out without disposing it (subscribers purge finished subscriptions this way, so a
/// long-lived compound does not grow without bound). Children are disposed outside the lock,
/// so a child's action may touch this compound again.
public final class CompoundDisposable: Disposable, @unchecked Sendable {
    private let lock = Lock()
    /// Guarded by `lock`; nil once disposed.
    private var children: ContiguousArray<Disposable>? = []

    public override init() { super.init() }

    /// A compound that starts out holding `disposables`.
    public init(_ disposables: [Disposable]) {
        children = ContiguousArray(disposables)
        super.init()
    }

    /// A compound with an action of its own, run when it is disposed, after its children.
    public override convenience init(_ action: @escaping @Sendable () -> Void) {
        self.init([Disposable(action)])
    }

    /// The number of children now held (for tests and leak checks).
    public var count: Int { lock.withLock { children?.count ?? 0 } }

    /// Adds `disposable`; disposes it at once when this compound is already disposed.
    /// A nil argument is ignored.
    public func add(_ disposable: Disposable?) {
        guard let disposable, disposable !== self else { return }
        let added: Bool = lock.withLock {
            guard children != nil else { return false }
            // A subscription is often handed the same child twice in a row (by `didSubscribe`
            // and as the body's result): keep one.
            if children!.last !== disposable { children!.append(disposable) }
            return true
        }
        if !added { disposable.dispose() }
    }

    /// Adds a block to run when this compound is disposed.
    public func add(_ action: @escaping @Sendable () -> Void) {
        add(Disposable(action))
    }

    /// Takes `disposable` out without disposing it. Does nothing if it is not held.
    public func remove(_ disposable: Disposable) {
        lock.withLock {
            guard let index = children?.lastIndex(where: { $0 === disposable }) else { return }
            children!.remove(at: index)
        }
    }

    public override func dispose() {
        guard markDisposed() else { return }
        let toDispose = lock.withLock { () -> ContiguousArray<Disposable>? in
            defer { children = nil }
            return children
        }
        toDispose?.forEach { $0.dispose() }
    }
}
