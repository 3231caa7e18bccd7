/// A subject with a current value, sent first to each new subscriber (ReactiveCocoa's
/// `RACBehaviorSubject`): it starts with an initial value and every value sent replaces it.
/// After termination a late subscriber gets the last value and then the terminal event.
public final class BehaviorSubject<Value: Sendable>: ReplaySubject<Value>, @unchecked Sendable {
    /// A behavior subject whose current value starts as `initial`; when `terminal` is given
    /// (`error` or `completed`), already terminated by it, as a behavior subject is restored
    /// from storage: a late subscriber gets `initial`, then the terminal event. With `weight`,
    /// `retainedWeight` is what the current value weighs.
    /// `dropped`, when given, is told of each value a newer one replaces.
    public init(
        _ initial: Value, terminal: Event<Value>? = nil, weight: (@Sendable (Value) -> Int)? = nil,
        dropped: (@Sendable (Value) -> Void)? = nil
    ) {
        super.init(
            capacity: 1, retaining: CollectionOfOne(initial), terminal: terminal, weight: weight, dropped: dropped)
    }

    /// The current value.
    public var value: Value {
        roster.lock.withLock { history.elements.last! }
    }
}
