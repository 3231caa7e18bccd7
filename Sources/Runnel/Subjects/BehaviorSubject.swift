/// A subject with a current value, sent first to each new subscriber (ReactiveCocoa's
/// `RACBehaviorSubject`): it starts with an initial value and every value sent replaces it.
/// After termination a late subscriber gets the last value and then the terminal event.
public final class BehaviorSubject<Value: Sendable>: ReplaySubject<Value>, @unchecked Sendable {
    /// A behavior subject whose current value starts as `initial`; when `terminal` is given
    /// (`error` or `completed`), already terminated by it, as a behavior subject is restored
    /// from storage: a late subscriber gets `initial`, then the terminal event. With `weight`,
    /// `retainedWeight` is what the current value weighs.
    /// `dropped`, when given, is told of each value a newer one replaces. `threading`: shared
    /// between threads or confined to one.
    public init(
        _ initial: Value, terminal: Event<Value>? = nil, weight: (@Sendable (Value) -> Int)? = nil,
        dropped: (@Sendable (Value) -> Void)? = nil, threading: SubjectThreading = .shared
    ) {
        super.init(
            capacity: 1, retaining: CollectionOfOne(initial), terminal: terminal, weight: weight, dropped: dropped,
            threading: threading)
    }

    /// The current value.
    public var value: Value {
        roster.withLock { history.elements.last! }
    }
}
