/// Disposes its inner disposable when it is deinitialised (ReactiveCocoa's
/// `RACScopedDisposable`): keep it in a stored property or a local to tie a subscription to
/// that owner's lifetime.
public final class ScopedDisposable: Disposable, @unchecked Sendable {
    private let wrapped: Disposable

    public init(_ disposable: Disposable) {
        wrapped = disposable
        super.init()
    }

    public override func dispose() {
        guard markDisposed() else { return }
        wrapped.dispose()
    }

    /// Already scoped: returns itself.
    public override func asScopedDisposable() -> ScopedDisposable { self }

    deinit { wrapped.dispose() }
}
