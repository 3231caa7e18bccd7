extension Signal {
    /// Sends `reduce` applied to the elements of each pair (ReactiveCocoa's `reduceEach:` on
    /// a signal of two-element tuples).
    ///
    /// Completes and errs with this signal. A signal of arrays needs no special form: use
    /// `map`, which hands the closure the whole array.
    public func reduceEach<A: Sendable, B: Sendable, U: Sendable>(
        _ reduce: @escaping @Sendable (A, B) -> U
    ) -> Signal<U> where Value == (A, B) {
        map { reduce($0.0, $0.1) }.named("[\(name)] -reduceEach:")
    }

    /// Sends `reduce` applied to the elements of each triple (ReactiveCocoa's `reduceEach:` on
    /// a signal of three-element tuples).
    ///
    /// Completes and errs with this signal.
    public func reduceEach<A: Sendable, B: Sendable, C: Sendable, U: Sendable>(
        _ reduce: @escaping @Sendable (A, B, C) -> U
    ) -> Signal<U> where Value == (A, B, C) {
        map { reduce($0.0, $0.1, $0.2) }.named("[\(name)] -reduceEach:")
    }
}
