extension Signal {
    /// Runs `block` once, at once, on `scheduler`, and replays what it sends to every
    /// subscriber (ReactiveCocoa's `startEagerlyWithScheduler:block:`).
    ///
    /// `block` may send from any thread (its subscriber serialises, as with `create`).
    /// Disposing a subscription does not stop the work: it is shared.
    public static func startEagerly(
        on scheduler: any Scheduler, _ block: @escaping @Sendable (any Subscriber<Value>) -> Void
    ) -> Signal<Value> {
        let connection = startConnection(on: scheduler, block)
        connection.connect()
        return connection.signal
    }

    /// Runs `block` once on `scheduler` when the result gets its first subscriber, and replays
    /// what it sends to every subscriber (ReactiveCocoa's `startLazilyWithScheduler:block:`).
    ///
    /// `block` may send from any thread (its subscriber serialises, as with `create`).
    /// Disposing a subscription does not stop the work: it is shared.
    public static func startLazily(
        on scheduler: any Scheduler, _ block: @escaping @Sendable (any Subscriber<Value>) -> Void
    ) -> Signal<Value> {
        let connection = startConnection(on: scheduler, block)
        return operatorSignal(name: "+startLazilyWithScheduler: \(scheduler)") { downstream in
            let subscription = connection.signal.subscribe(downstream)
            connection.connect()
            return subscription
        }
    }

    /// A replaying connection whose source runs `block` on `scheduler`.
    private static func startConnection(
        on scheduler: any Scheduler, _ block: @escaping @Sendable (any Subscriber<Value>) -> Void
    ) -> MulticastConnection<Value> {
        Signal.create { subscriber in
            scheduler.schedule { block(subscriber) }
        }
        .multicast(ReplaySubject())
    }
}
