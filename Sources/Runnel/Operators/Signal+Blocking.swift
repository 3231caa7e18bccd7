import Dispatch

extension Signal {
    /// Blocks until this signal sends its first value and returns it (ReactiveCocoa's
    /// `first`). Throws the signal's error, or `RunnelError.noValue` if it completes empty.
    ///
    /// Never call a blocking operator on a scheduler's own thread (a queue or an event loop):
    /// if the signal needs that thread to deliver, it waits forever. It is a precondition
    /// failure while a `ThreadConfinedScheduler` is `currentScheduler`. On a thread with a
    /// `TestScheduler` current, only signals that deliver synchronously can finish.
    public func first() throws -> Value {
        let outcome = waitForOutcome(stopAfterFirst: true)
        if let value = outcome.values.first { return value }
        if let error = outcome.error { throw error }
        throw RunnelError.noValue
    }

    /// Blocks until the first value and returns it, or `defaultValue` if the signal completes
    /// empty or fails (ReactiveCocoa's `firstOrDefault:`). Same thread rules as `first()`.
    public func first(default defaultValue: Value) -> Value {
        waitForOutcome(stopAfterFirst: true).values.first ?? defaultValue
    }

    /// Blocks until the signal completes; throws its error (ReactiveCocoa's
    /// `waitUntilCompleted:`). Same thread rules as `first()`.
    public func waitUntilCompleted() throws {
        if let error = waitForOutcome(stopAfterFirst: false, keepValues: false).error { throw error }
    }

    /// Blocks until the signal completes and returns all its values (ReactiveCocoa's
    /// `toArray`); throws its error. Same thread rules as `first()`.
    public func toArray() throws -> [Value] {
        let outcome = waitForOutcome(stopAfterFirst: false)
        if let error = outcome.error { throw error }
        return outcome.values
    }

    /// Subscribes and blocks the calling thread until the signal terminates, or until its
    /// first value when `stopAfterFirst` (then the subscription is disposed).
    private func waitForOutcome(stopAfterFirst: Bool, keepValues: Bool = true) -> BlockingOutcome<Value> {
        precondition(
            !(currentScheduler is any ThreadConfinedScheduler),
            "blocking on a scheduler's own thread deadlocks: call first()/toArray()/waitUntilCompleted() elsewhere")
        let outcome = Locked(BlockingOutcome<Value>())
        let finished = DispatchSemaphore(value: 0)
        /// Signals `finished` once, whichever event gets there first.
        @Sendable func finish(_ update: (inout BlockingOutcome<Value>) -> Void) {
            let first: Bool = outcome.withLock { state in
                guard !state.done else { return false }
                update(&state)
                state.done = true
                return true
            }
            if first { finished.signal() }
        }
        let subscription = subscribe(
            next: { value in
                if stopAfterFirst {
                    finish { $0.values.append(value) }
                } else if keepValues {
                    outcome.withLock { $0.values.append(value) }
                }
            },
            error: { error in finish { $0.error = error } },
            completed: { finish { _ in } })
        finished.wait()
        subscription.dispose()
        return outcome.withLock { $0 }
    }
}

/// What a blocking operator saw.
struct BlockingOutcome<Value: Sendable>: Sendable {
    var values: [Value] = []
    var error: (any Error)?
    var done = false
}
