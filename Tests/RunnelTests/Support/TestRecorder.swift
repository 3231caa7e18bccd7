@testable import Runnel

/// Records every event a signal sends, thread-safely, for assertions.
///
/// Subscribe it like any subscriber (`signal.subscribe(recorder)`), inside
/// `ImmediateScheduler.shared.performAsCurrent { }` or a `TestScheduler` so the subscription
/// runs inline. It keeps the subscriptions it is handed so a test can count them.
final class Recorder<Value: Sendable>: Subscriber {
    private let recorded = Locked<[Event<Value>]>([])
    private let subscriptions = Locked<[CompoundDisposable]>([])

    init() {}

    /// Every event so far, in order.
    var events: [Event<Value>] { recorded.withLock { $0 } }

    /// The values so far, in order.
    var values: [Value] { events.compactMap(\.value) }

    /// Whether a `completed` event has been recorded.
    var isCompleted: Bool {
        events.contains { if case .completed = $0 { return true } else { return false } }
    }

    /// The first error recorded, if any.
    var error: (any Error)? { events.lazy.compactMap(\.error).first }

    /// Whether a terminal event has been recorded.
    var isTerminated: Bool { events.contains(where: \.isTerminal) }

    /// How many subscriptions this recorder was handed.
    var subscriptionCount: Int { subscriptions.withLock { $0.count } }

    func sendNext(_ value: Value) { recorded.withLock { $0.append(.next(value)) } }
    func sendError(_ error: any Error) { recorded.withLock { $0.append(.error(error)) } }
    func sendCompleted() { recorded.withLock { $0.append(.completed) } }
    func didSubscribe(with disposable: CompoundDisposable) { subscriptions.withLock { $0.append(disposable) } }
}
