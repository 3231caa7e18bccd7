extension Signal {
    /// Runs `block` on each value and sends the value when it returns; when it throws, sends
    /// that error instead (ReactiveCocoa's `try:`).
    ///
    /// - Completion: with this signal.
    /// - Error: the error thrown by `block`, after which this signal is disposed and nothing
    ///   more is sent; or this signal's error.
    public func `try`(_ block: @escaping @Sendable (Value) throws -> Void) -> Signal<Value> {
        tryMap { value in
            try block(value)
            return value
        }.named("[\(name)] -try:")
    }
}
