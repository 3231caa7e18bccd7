extension Signal where Value == [Bool] {
    /// Sends whether every element of each array is true (ReactiveCocoa's `and`, which reads
    /// tuples of booleans). An empty array gives true.
    ///
    /// Completes and errs with this signal.
    public func and() -> Signal<Bool> {
        map { $0.allSatisfy { $0 } }.named("[\(name)] -and")
    }

    /// Sends whether any element of each array is true (ReactiveCocoa's `or`, which reads
    /// tuples of booleans). An empty array gives false.
    ///
    /// Completes and errs with this signal.
    public func or() -> Signal<Bool> {
        map { $0.contains(true) }.named("[\(name)] -or")
    }
}
