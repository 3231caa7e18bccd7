extension Signal {
    /// The values of each of `signals` in turn: each is subscribed only once the one before it
    /// has completed (ReactiveCocoa's `concat:`).
    ///
    /// Completes when the last one completes (at once for an empty array). An error is sent
    /// on, and the signals after it are never subscribed. Disposing the result disposes the
    /// running one and stops the sequence.
    public static func concat(_ signals: [Signal<Value>]) -> Signal<Value> {
        Signal<Signal<Value>>.from(signals).concat().named("+concat: \(signals)")
    }

}
