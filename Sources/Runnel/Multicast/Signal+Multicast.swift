extension Signal {
    /// A connection that shares one subscription to this signal through `subject`
    /// (ReactiveCocoa's `multicast:`). Nothing is subscribed until `connect()`.
    public func multicast(_ subject: Subject<Value>) -> MulticastConnection<Value> {
        MulticastConnection(source: self, subject: subject)
    }

    /// A connection that shares one subscription to this signal through a plain `Subject`
    /// (ReactiveCocoa's `publish`): subscribers see only what comes after they subscribe.
    public func publish() -> MulticastConnection<Value> {
        multicast(Subject())
    }

    /// Subscribes to this signal at once, once, and replays every value and the terminal
    /// event to each subscriber (ReactiveCocoa's `replay`). The subscription to this signal
    /// is never disposed by the result's subscribers.
    public func replay() -> Signal<Value> {
        let connection = multicast(ReplaySubject())
        connection.connect()
        return connection.signal
    }

    /// As `replay()`, but keeps and replays only the latest value (ReactiveCocoa's
    /// `replayLast`).
    public func replayLast() -> Signal<Value> {
        let connection = multicast(ReplaySubject(capacity: 1))
        connection.connect()
        return connection.signal
    }

    /// As `replay()`, but subscribes to this signal only when the result gets its first
    /// subscriber (ReactiveCocoa's `replayLazily`).
    public func replayLazily() -> Signal<Value> {
        let connection = multicast(ReplaySubject())
        return Signal.operatorSignal(name: "[\(self.name)] -replayLazily") { downstream in
            connection.connect()
            return connection.signal.subscribe(downstream)
        }
    }
}
