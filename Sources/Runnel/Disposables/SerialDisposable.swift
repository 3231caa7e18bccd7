/// Holds one inner disposable that can be swapped (ReactiveCocoa's `RACSerialDisposable`).
///
/// Thread-safe. Swapping does not dispose the old inner disposable: `swapIn` hands it back.
/// Once the serial disposable is disposed, its inner one is disposed, and any inner one set
/// afterwards is disposed at once.
public final class SerialDisposable: Disposable, @unchecked Sendable {
    private let lock = Lock()
    /// Guarded by `lock`.
    private var current: Disposable?

    public init(_ inner: Disposable? = nil) {
        current = inner
        super.init()
    }

    /// The inner disposable; setting it replaces the old one without disposing it.
    public var inner: Disposable? {
        get { lock.withLock { current } }
        set { _ = swapIn(newValue) }
    }

    /// Sets a new inner disposable and returns the old one, undisposed. After disposal the new
    /// one is disposed at once and nil is returned.
    @discardableResult
    public func swapIn(_ newInner: Disposable?) -> Disposable? {
        let (old, disposeNew) = lock.withLock { () -> (Disposable?, Bool) in
            if isDisposed { return (nil, true) }
            defer { current = newInner }
            return (current, false)
        }
        if disposeNew { newInner?.dispose() }
        return old
    }

    public override func dispose() {
        guard markDisposed() else { return }
        let old = lock.withLock { () -> Disposable? in
            defer { current = nil }
            return current
        }
        old?.dispose()
    }
}
