import Synchronization

/// Stands between a signal's body and the subscriber of one subscription (ReactiveCocoa's
/// `RACPassthroughSubscriber`).
///
/// It drops every event once the subscription is disposed or has terminated, and disposes
/// the subscription after forwarding its terminal event, so whatever the body set up is
/// released. With a `lock` (signals made by `Signal.create`, whose bodies may send from any
/// thread) it also serialises events; operator signals pass none, because their upstream is
/// already serialised.
final class PassthroughSubscriber<Value: Sendable>: Subscriber, @unchecked Sendable {
    let downstream: any Subscriber<Value>
    let disposable: CompoundDisposable
    private let lock: Lock?
    /// Touched only while events are serialised, so relaxed ordering is enough; an atomic
    /// rather than a stored `var` because a class's `var` gets a dynamic exclusivity check on
    /// every access, on the per-value path of every operator.
    private let terminated = Atomic<Bool>(false)

    init(_ downstream: any Subscriber<Value>, disposable: CompoundDisposable, lock: Lock?) {
        self.downstream = downstream
        self.disposable = disposable
        self.lock = lock
        downstream.didSubscribe(with: disposable)
    }

    @inline(__always)
    private func serialized(_ body: () -> Void) {
        if let lock {
            lock.lock()
            body()
            lock.unlock()
        } else {
            body()
        }
    }

    func sendNext(_ value: Value) {
        serialized {
            guard !terminated.load(ordering: .relaxed), !disposable.isDisposed else { return }
            downstream.sendNext(value)
        }
    }

    func sendError(_ error: any Error) {
        serialized {
            guard !terminated.load(ordering: .relaxed), !disposable.isDisposed else { return }
            terminated.store(true, ordering: .relaxed)
            downstream.sendError(error)
        }
        disposable.dispose()
    }

    func sendCompleted() {
        serialized {
            guard !terminated.load(ordering: .relaxed), !disposable.isDisposed else { return }
            terminated.store(true, ordering: .relaxed)
            downstream.sendCompleted()
        }
        disposable.dispose()
    }

    /// The body handed this subscriber on to another signal: that inner subscription is
    /// disposed with this one.
    func didSubscribe(with other: CompoundDisposable) {
        if other !== disposable { disposable.add(other) }
    }
}
