extension Signal {
    /// Prints every event with this signal's description (its debug name when
    /// `RUNNEL_DEBUG_SIGNAL_NAMES` is set), as ReactiveCocoa's `logAll` does with `NSLog`.
    /// Events pass through unchanged.
    public func log() -> Signal<Value> {
        let label = description
        return sideEffect(
            name: "logAll", next: { value in print("\(label) next: \(value)") },
            error: { error in print("\(label) error: \(error)") }, completed: { print("\(label) completed") })
    }

    /// Prints each value as `<signal> next: value`.
    public func logNext() -> Signal<Value> {
        let label = description
        return doNext { value in print("\(label) next: \(value)") }
    }

    /// Prints the error as `<signal> error: error`.
    public func logError() -> Signal<Value> {
        let label = description
        return doError { error in print("\(label) error: \(error)") }
    }

    /// Prints `<signal> completed` on completion.
    public func logCompleted() -> Signal<Value> {
        let label = description
        return doCompleted { print("\(label) completed") }
    }
}
