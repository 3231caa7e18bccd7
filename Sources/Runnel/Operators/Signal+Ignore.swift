extension Signal where Value: Equatable {
    /// Sends every value except those equal to `value` (ReactiveCocoa's `ignore:`).
    ///
    /// Completes and errs with this signal.
    public func ignore(_ value: Value) -> Signal<Value> {
        filter { $0 != value }.named("[\(name)] -ignore: \(value)")
    }
}
