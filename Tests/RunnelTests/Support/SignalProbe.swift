@testable import Runnel

/// A controllable source made with `Signal.create` that counts its subscriptions and their
/// disposals, to check that operators subscribe and dispose their sources as they should.
final class SignalProbe<Value: Sendable>: @unchecked Sendable {
    let subject = Subject<Value>()
    private let counts = Locked((subscribed: 0, disposed: 0))

    init() {}

    /// A signal whose subscriptions subscribe to `subject` and are counted.
    var signal: Signal<Value> {
        Signal.create { [self] subscriber in
            counts.withLock { $0.subscribed += 1 }
            let subscription = subject.subscribe(subscriber)
            return CompoundDisposable([
                subscription, Disposable { [self] in counts.withLock { $0.disposed += 1 } },
            ])
        }
    }

    /// How many times `signal` has been subscribed.
    var subscriptions: Int { counts.withLock { $0.subscribed } }
    /// How many of those subscriptions have been disposed (or ended).
    var disposals: Int { counts.withLock { $0.disposed } }
    /// Whether a subscription is live.
    var isSubscribed: Bool { counts.withLock { $0.subscribed > $0.disposed } }

    func send(_ value: Value) { subject.sendNext(value) }
    func complete() { subject.sendCompleted() }
    func fail(_ error: any Error) { subject.sendError(error) }
}
