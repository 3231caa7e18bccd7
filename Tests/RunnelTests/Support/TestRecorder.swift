@testable import Runnel

/// Records every event a signal sends, for assertions. Thread-safe.
final class Recorder<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let recorded = Locked<[Event<Value>]>([])

    init() {}

    /// Every event so far, in order.
    var events: [Event<Value>] { recorded.withLock { $0 } }

    /// The values so far, in order.
    var values: [Value] { events.compactMap(\.value) }

    /// Whether `completed` was received.
    var isCompleted: Bool {
        events.contains {
            if case .completed = $0 { return true }
            return false
        }
    }

    /// The error received, if any.
    var error: (any Error)? { events.lazy.compactMap(\.error).first }

    func sendNext(_ value: Value) { recorded.withLock { $0.append(.next(value)) } }
    func sendError(_ error: any Error) { recorded.withLock { $0.append(.error(error)) } }
    func sendCompleted() { recorded.withLock { $0.append(.completed) } }
    func didSubscribe(with disposable: CompoundDisposable) {}
}
