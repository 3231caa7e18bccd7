extension Signal {
    /// Sends this signal's events until `other` sends a value or completes, then completes
    /// (ReactiveCocoa's `takeUntil:`).
    ///
    /// `other` is subscribed first: if it sends a value or completes while being subscribed,
    /// the result completes without subscribing this signal at all, so nothing this signal
    /// would send on subscription gets through. An error from `other` is ignored (as in
    /// ReactiveCocoa and the daemon protocol's `takeUntil`): this signal then runs on. This
    /// signal's error and completion are sent on. Completion or disposal disposes both.
    public func take<U: Sendable>(until other: Signal<U>) -> Signal<Value> {
        Signal.operatorSignal(name: "[\(self.name)] -takeUntil: \(other)") { downstream in
            let output = SerializedOutput(downstream)
            output.lock.withLock {
                other.subscribe(
                    output.member { (event: Event<U>) in
                        // Called with the lock held.
                        if event.error == nil { output.sendCompleted() }
                    })
                if output.isStopped { return }
                self.subscribe(
                    output.member { (event: Event<Value>) in
                        output.send(event)
                    })
            }
            return nil
        }
    }
}
