extension Signal where Value == Bool {
    /// Sends the negation of each value (ReactiveCocoa's `not`).
    ///
    /// Completes and errs with this signal.
    public func not() -> Signal<Bool> {
        map { !$0 }.named("[\(name)] -not")
    }
}
