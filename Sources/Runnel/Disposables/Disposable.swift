import Synchronization

/// Cleans up after a subscription or cancels scheduled work (ReactiveCocoa's `RACDisposable`).
///
/// `dispose()` may be called from any thread, any number of times; the block given at
/// creation runs at most once, on the thread of the first call. `isDisposed` turns true
/// before the block runs.
///
/// The subclasses `CompoundDisposable`, `SerialDisposable` and `ScopedDisposable` extend
/// `dispose()`; the class is not open outside the library.
public class Disposable: @unchecked Sendable {
    /// 0 = live, 1 = disposed.
    private let state = Atomic<UInt8>(0)
    /// Written in `init`, then read and cleared only by the one thread that wins `state`.
    private var action: (@Sendable () -> Void)?

    /// A disposable with no action: it only records that it was disposed.
    public init() { action = nil }

    /// A disposable that runs `action` the first time it is disposed.
    public init(_ action: @escaping @Sendable () -> Void) { self.action = action }

    /// Whether `dispose()` has been called.
    public var isDisposed: Bool { state.load(ordering: .acquiring) != 0 }

    /// Disposes: runs the action (once), releasing what it captured.
    public func dispose() {
        guard state.exchange(1, ordering: .acquiringAndReleasing) == 0 else { return }
        let action = self.action
        self.action = nil
        action?()
    }

    /// Marks the disposable disposed; returns true for the caller that did it first.
    /// Subclasses call this from `dispose()` before their own work.
    final func markDisposed() -> Bool {
        state.exchange(1, ordering: .acquiringAndReleasing) == 0
    }

    /// A `ScopedDisposable` that disposes this one when it is deinitialised.
    public func asScopedDisposable() -> ScopedDisposable { ScopedDisposable(self) }
}
