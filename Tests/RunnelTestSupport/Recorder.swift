import Runnel

/// A subscriber that records every event it is sent, for assertions on what a signal
/// delivered.
///
/// Thread rules: events may arrive on any thread and every access goes through a lock, so a
/// test reads it from its own thread while sources still send. Subscribe it like any
/// subscriber (`signal.subscribe(recorder)`) with a scheduler current, such as
/// `ImmediateScheduler.shared.performAsCurrent { }` or a `TestScheduler`, so that the
/// subscription runs inline. It keeps the subscriptions it is handed so a test can count them.
public final class Recorder<Value: Sendable>: Subscriber {
    private let recorded = Locked<[Event<Value>]>([])
    private let subscriptions = Locked<[CompoundDisposable]>([])

    public init() {}

    /// Every event so far, in order.
    public var events: [Event<Value>] { recorded.withLock { $0 } }

    /// The events so far as text (`next(1)`, `error(TestError(1))`, `completed`), so that a
    /// whole history compares with `==`.
    public var eventDescriptions: [String] { events.map(\.description) }

    /// The values so far, in order.
    public var values: [Value] { events.compactMap(\.value) }

    /// Whether a `completed` event has been recorded.
    public var isCompleted: Bool {
        events.contains { if case .completed = $0 { return true } else { return false } }
    }

    /// The first error recorded, if any.
    public var error: (any Error)? { events.lazy.compactMap(\.error).first }

    /// Whether a terminal event has been recorded.
    public var isTerminated: Bool { events.contains(where: \.isTerminal) }

    /// How many subscriptions this recorder was handed.
    public var subscriptionCount: Int { subscriptions.withLock { $0.count } }

    public func sendNext(_ value: Value) { recorded.withLock { $0.append(.next(value)) } }
    public func sendError(_ error: any Error) { recorded.withLock { $0.append(.error(error)) } }
    public func sendCompleted() { recorded.withLock { $0.append(.completed) } }
    public func didSubscribe(with disposable: CompoundDisposable) {
        subscriptions.withLock { $0.append(disposable) }
    }
}
