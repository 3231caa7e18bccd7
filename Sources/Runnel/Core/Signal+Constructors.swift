extension Signal {
    /// Sends `value`, then completes (ReactiveCocoa's `return:`).
    public static func just(_ value: Value) -> Signal<Value> {
        operatorSignal(name: "+just: \(value)") { subscriber in
            subscriber.sendNext(value)
            subscriber.sendCompleted()
            return nil
        }
    }

    /// Completes at once, with no value.
    public static var empty: Signal<Value> {
        operatorSignal(name: "+empty") { subscriber in
            subscriber.sendCompleted()
            return nil
        }
    }

    /// Never sends anything.
    public static var never: Signal<Value> {
        operatorSignal(name: "+never") { _ in nil }
    }

    /// Fails at once with `error`.
    public static func error(_ error: any Error) -> Signal<Value> {
        operatorSignal(name: "+error: \(error)") { subscriber in
            subscriber.sendError(error)
            return nil
        }
    }

    /// Runs `factory` at each subscription and subscribes to the signal it returns
    /// (ReactiveCocoa's `defer:`).
    public static func deferred(_ factory: @escaping @Sendable () -> Signal<Value>) -> Signal<Value> {
        operatorSignal(name: "+defer:") { subscriber in
            factory().subscribe(subscriber)
        }
    }

    /// Sends each element of `sequence` in order, then completes (ReactiveCocoa's
    /// `rac_sequence.signal`). Stops early once disposed.
    ///
    /// Inlinable so that the loop is specialised for the caller's sequence type: iterating
    /// an unknown `Sequence` through witness tables costs far more than sending the value.
    @inlinable
    public static func from<S: Sequence & Sendable>(_ sequence: S) -> Signal<Value> where S.Element == Value {
        operatorSignal(name: "+from: \(S.self)") { subscriber in
            // Linked into the subscription, so the loop sees disposal (by `take`, say) at once.
            let disposable = CompoundDisposable()
            subscriber.didSubscribe(with: disposable)
            for value in sequence {
                if disposable.isDisposed { return disposable }
                subscriber.sendNext(value)
            }
            subscriber.sendCompleted()
            return disposable
        }
    }
}

extension Sequence where Self: Sendable, Element: Sendable {
    /// The elements as a signal (ReactiveCocoa's `rac_sequence.signal`).
    public var signal: Signal<Element> { Signal.from(self) }
}
