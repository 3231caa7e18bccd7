extension Signal {
    /// Subscribes blocks for the events (ReactiveCocoa's `subscribeNext:error:completed:`).
    /// After the returned disposable is disposed no block runs again.
    @discardableResult
    public func subscribe(
        next: (@Sendable (Value) -> Void)? = nil,
        error: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil
    ) -> Disposable {
        let subscriber = BlockSubscriber(next: next, error: error, completed: completed)
        subscribe(subscriber)
        // The subscriber holds the subscription (handed over by `didSubscribe`): disposing its
        // disposable disposes the subscription and stops the subscriber, waiting out a
        // running block.
        return subscriber.disposable
    }

    /// Subscribes a block for values only.
    @discardableResult
    public func subscribeNext(_ next: @escaping @Sendable (Value) -> Void) -> Disposable {
        subscribe(next: next)
    }

    /// Subscribes a block for the error only.
    @discardableResult
    public func subscribeError(_ error: @escaping @Sendable (any Error) -> Void) -> Disposable {
        subscribe(error: error)
    }

    /// Subscribes a block for completion only.
    @discardableResult
    public func subscribeCompleted(_ completed: @escaping @Sendable () -> Void) -> Disposable {
        subscribe(completed: completed)
    }
}
