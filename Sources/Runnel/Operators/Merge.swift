extension Signal {
    /// The values of all `signals` as they arrive (ReactiveCocoa's `merge:`).
    ///
    /// Completes when all of them have completed (at once for an empty array). The first
    /// error is sent on and disposes the others; as in ReactiveCocoa, signals after one that
    /// failed while being subscribed are not subscribed at all. Disposing the result disposes
    /// every source.
    public static func merge(_ signals: [Signal<Value>]) -> Signal<Value> {
        Signal<Signal<Value>>.from(signals).flatten().named("+merge: \(signals)")
    }

    /// The values of this signal and of `other` as they arrive (ReactiveCocoa's `merge:`).
    /// Completes when both have completed; an error from either is sent on and disposes the
    /// other.
    public func merge(_ other: Signal<Value>) -> Signal<Value> {
        Signal.merge([self, other])
    }
}
