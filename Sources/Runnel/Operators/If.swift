extension Signal {
    /// Switches to `then` each time `bools` sends true, and to `else` each time it sends false
    /// (ReactiveCocoa's `if:then:else:`).
    ///
    /// Behaves as `switchToLatest`: completes when `bools` and the current branch have
    /// completed; any error is sent on and disposes everything; disposing the result disposes
    /// `bools` and the current branch.
    public static func `if`(_ bools: Signal<Bool>, then thenSignal: Signal<Value>, else elseSignal: Signal<Value>)
        -> Signal<Value>
    {
        Signal.switch(bools, cases: [true: thenSignal, false: elseSignal])
    }
}
