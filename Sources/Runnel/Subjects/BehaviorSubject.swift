/// A subject with a current value, sent first to each new subscriber (ReactiveCocoa's
/// `RACBehaviorSubject`): it starts with an initial value and every value sent replaces it.
/// After termination a late subscriber gets the last value and then the terminal event.
public final class BehaviorSubject<Value: Sendable>: ReplaySubject<Value>, @unchecked Sendable {
    /// A behavior subject whose current value starts as `initial`.
    public init(_ initial: Value) {
        super.init(capacity: 1, initial: [initial])
    }

    /// The current value.
    public var value: Value {
        roster.lock.withLock { history.elements.last! }
    }
}
