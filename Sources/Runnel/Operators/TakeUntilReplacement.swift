extension Signal {
    /// Sends this signal's values until `replacement` sends any event, then sends
    /// `replacement`'s events instead (ReactiveCocoa's `takeUntilReplacement:`).
    ///
    /// `replacement` is subscribed first (if it sends at once, this signal is never
    /// subscribed); its first event of any kind disposes this signal. This signal's completion
    /// is not sent on (the result waits for `replacement`); its error is. The result
    /// completes or fails when `replacement` does. Disposing the result disposes both.
    public func take(untilReplacement replacement: Signal<Value>) -> Signal<Value> {
        Signal.operatorSignal(name: "[\(self.name)] -takeUntilReplacement: \(replacement)") { downstream in
            TakeUntilReplacementState(downstream).start(self, replacement)
            return nil
        }
    }
}

/// The state of one `take(untilReplacement:)` subscription, guarded by the output's lock.
final class TakeUntilReplacementState<Value: Sendable>: @unchecked Sendable {
    private let output: SerializedOutput<Value>
    private var replaced = false
    private var source: MemberSink<Value>?

    init(_ downstream: any Subscriber<Value>) {
        output = SerializedOutput(downstream)
    }

    func start(_ signal: Signal<Value>, _ replacement: Signal<Value>) {
        output.lock.withLock {
            replacement.subscribe(output.member { [self] event in onReplacement(event) })
            if replaced || output.isStopped { return }
            let source = output.member { [self] event in onSource(event) }
            self.source = source
            signal.subscribe(source)
        }
    }

    /// Called with the lock held, as is `onSource`.
    private func onReplacement(_ event: Event<Value>) {
        if !replaced {
            replaced = true
            source?.cancel()
            source = nil
        }
        output.send(event)
    }

    private func onSource(_ event: Event<Value>) {
        // Events of the replaced signal still on their way are dropped; its completion
        // leaves the result waiting for the replacement.
        guard !replaced else { return }
        if case .completed = event { return }
        output.send(event)
    }
}
