extension Signal {
    /// Sends `value` at subscription, then this signal's events (ReactiveCocoa's
    /// `startWith:`).
    ///
    /// Completes and errs with this signal, after `value` has been sent.
    public func startWith(_ value: Value) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -startWith: \(value)") { downstream in
            downstream.sendNext(value)
            return source.subscribe(downstream)
        }
    }
}
