import Runnel

/// An error for tests.
struct TestError: Error, Equatable, CustomStringConvertible {
    let code: Int
    init(_ code: Int = 1) { self.code = code }
    var description: String { "TestError(\(code))" }
}

/// Records the events one subscription delivers, as strings ("next(1)", "completed",
/// "error(TestError(1))") so whole histories compare with `==`.
final class EventLog<Value: Sendable>: @unchecked Sendable {
    private let lock = Lock()
    private var recorded: [String] = []
    private var recordedValues: [Value] = []

    var events: [String] { lock.withLock { recorded } }
    var values: [Value] { lock.withLock { recordedValues } }
    var isTerminated: Bool {
        lock.withLock { recorded.last.map { $0 == "completed" || $0.hasPrefix("error") } ?? false }
    }

    /// Subscribes with blocks; the subscription runs inline if a scheduler is current.
    @discardableResult
    func subscribe(to signal: Signal<Value>) -> Disposable {
        signal.subscribe(
            next: { value in self.record("next(\(value))", value) },
            error: { error in self.record("error(\(error))", nil) },
            completed: { self.record("completed", nil) })
    }

    private func record(_ event: String, _ value: Value?) {
        lock.withLock {
            recorded.append(event)
            if let value { recordedValues.append(value) }
        }
    }
}

/// Runs `body` with `TestScheduler` current, so subscriptions are synchronous.
@discardableResult
func onTestScheduler<T>(_ scheduler: TestScheduler, _ body: () throws -> T) rethrows -> T {
    try scheduler.performAsCurrent(body)
}

/// Runs `body` with the immediate scheduler current, so subscriptions are synchronous.
@discardableResult
func inline<T>(_ body: () throws -> T) rethrows -> T {
    try ImmediateScheduler.shared.performAsCurrent(body)
}
