extension Signal {
    /// Sends `value` in place of each value of this signal (ReactiveCocoa's `mapReplace:`).
    ///
    /// Completes and errs with this signal.
    public func mapReplace<U: Sendable>(_ value: U) -> Signal<U> {
        map { _ in value }.named("[\(name)] -mapReplace: \(value)")
    }
}
