/// A disposable that disposes many others together (ReactiveCocoa's `RACCompoundDisposable`).
///
/// Thread-safe. Adding to a disposed compound disposes the added one at once; `remove` takes
/// one out without disposing it. A child compound added with `addPurging` takes itself out
/// when it is disposed (subscribers hold their subscriptions this way, so a long-lived
/// compound does not grow with finished ones). Children are disposed outside the lock, so a
/// child's action may touch this compound again.
///
/// Not open outside the library; its subclasses there (a block subscriber's blocks, a
/// subject's subscriptions) add work to disposal through `willDispose`.
public class CompoundDisposable: Disposable, @unchecked Sendable {
    /// A spin lock, not a `Lock`: subscriptions make several compounds each, and the
    /// sections below only touch the children (which are disposed outside it).
    private let lock = SpinLock()
    /// Guarded by `lock`. Most compounds hold one to three children, so two live inline and
    /// only more take an array allocation.
    private var first: Disposable?
    private var second: Disposable?
    private var rest: ContiguousArray<Disposable> = []
    private var disposedChildren = false
    /// Guarded by `lock`: the compound that added this one with `addPurging`. Weak, so that
    /// neither keeps the other alive: a subscriber dropped without disposing lets its
    /// subscriptions go. (It gives the parent a side table, once per subscriber; the
    /// per-value path never retains the parent.)
    private weak var parent: CompoundDisposable?

    public override init() { super.init() }

    /// A compound that starts out holding `disposables`.
    public init(_ disposables: [Disposable]) {
        super.init()
        for disposable in disposables { store(disposable) }
    }

    /// A compound with an action of its own, run when it is disposed, after its children.
    public override convenience init(_ action: @escaping @Sendable () -> Void) {
        self.init([Disposable(action)])
    }

    /// The number of children now held (for tests and leak checks).
    public var count: Int {
        lock.withLock { (first == nil ? 0 : 1) + (second == nil ? 0 : 1) + rest.count }
    }

    /// Adds `disposable`; disposes it at once when this compound is already disposed.
    /// A nil argument is ignored.
    public func add(_ disposable: Disposable?) {
        guard let disposable, disposable !== self else { return }
        let added: Bool = lock.withLock {
            guard !disposedChildren else { return false }
            // A subscription is often handed the same child twice in a row (by `didSubscribe`
            // and as the body's result): keep one.
            if (rest.last ?? second ?? first) !== disposable { store(disposable) }
            return true
        }
        if !added { disposable.dispose() }
    }

    /// Puts `disposable` in the first free place (lock held, or during init).
    private func store(_ disposable: Disposable) {
        if first == nil && rest.isEmpty && second == nil {
            first = disposable
        } else if second == nil && rest.isEmpty {
            second = disposable
        } else {
            rest.append(disposable)
        }
    }

    /// Adds `child`, which takes itself out of this compound when it is disposed (if this
    /// compound still exists). A child already disposed is not added.
    func addPurging(_ child: CompoundDisposable) {
        guard child !== self, !child.isDisposed else { return }
        add(child)
        let attached: Bool = child.lock.withLock {
            guard !child.disposedChildren else { return false }
            child.parent = self
            return true
        }
        // Disposed in between: it could not take itself out, so take it out here.
        if !attached { remove(child) }
    }

    /// Adds a block to run when this compound is disposed.
    public func add(_ action: @escaping @Sendable () -> Void) {
        add(Disposable(action))
    }

    /// Takes `disposable` out without disposing it. Does nothing if it is not held.
    public func remove(_ disposable: Disposable) {
        lock.withLock {
            if let index = rest.lastIndex(where: { $0 === disposable }) {
                rest.remove(at: index)
            } else if second === disposable {
                second = nil
            } else if first === disposable {
                first = nil
            }
        }
    }

    public override func dispose() {
        guard markDisposed() else { return }
        willDispose()
        let (one, two, more, parent) = lock.withLock {
            () -> (Disposable?, Disposable?, ContiguousArray<Disposable>, CompoundDisposable?) in
            disposedChildren = true
            defer {
                first = nil
                second = nil
                rest = []
                self.parent = nil
            }
            return (first, second, rest, self.parent)
        }
        one?.dispose()
        two?.dispose()
        for disposable in more { disposable.dispose() }
        // A parent being disposed is dropping its children already.
        if let parent, !parent.isDisposed { parent.remove(self) }
    }

    /// Runs once, on the disposing thread, before the children are disposed (for subclasses).
    func willDispose() {}
}
