extension Signal {
    /// Maps each value to a signal and sends on the values of all of them
    /// (ReactiveCocoa's `flattenMap:`).
    ///
    /// Completes when this signal and every mapped signal have completed. The first error,
    /// from this signal or a mapped one, is sent on and disposes everything. Disposing the
    /// result disposes this signal and every mapped one.
    public func flatMap<U: Sendable>(_ transform: @escaping @Sendable (Value) -> Signal<U>) -> Signal<U> {
        wrapped(transform).flatten()
    }
}
