import Runnel

/// A count one subscription's stage keeps (values held by an accumulating library operator),
/// so that the stage can end the subscription with "limit" before the operator's buffer
/// grows past `max_buffer_values`.
///
/// Loop thread only (one per subscription, made inside `Signal.deferred`): both the stage's
/// sources and its timers run on the one loop thread, so no lock is taken.
final class StageCounter: @unchecked Sendable {
    var count = 0
}

extension Signal {
    /// Adds one to `counter` for each value before sending it on, and ends with "limit" for
    /// the stage at `index` once the count passes `limit`. The stage gives counts back as its
    /// operator lets values go. Loop thread, like the counter.
    func counting(into counter: StageCounter, limit: Int, stage index: Int) -> Signal<Value> {
        self.try { _ in
            counter.count += 1
            if counter.count > limit { throw StageFailure.limit(stage: index) }
        }
    }
}

extension StageCompiler {
    /// `signal` counted toward `max_buffer_values` for `stage`, with a counter of its own for
    /// each subscription, passed to `body` with that counter so that the stage can give counts
    /// back as its operator lets values go.
    func countingHeld(
        by stage: StageArguments, _ signal: Signal<Message>,
        _ body: @escaping @Sendable (_ counted: Signal<Message>, _ held: StageCounter) -> Signal<Message>
    ) -> Signal<Message> {
        let maxValues = limits.maxBufferValues
        let index = stage.index
        return Signal.deferred {
            let held = StageCounter()
            return body(signal.counting(into: held, limit: maxValues, stage: index), held)
        }
    }
}
