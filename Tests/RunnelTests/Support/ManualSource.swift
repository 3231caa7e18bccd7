import RunnelTestSupport
import Testing

@testable import Runnel

/// A cold source driven by hand: each subscription's subscriber is kept until it is disposed,
/// and `send`/`complete`/`fail` reach every live subscriber. It counts subscriptions and
/// disposals so tests can check that an operator disposes its source.
final class ManualSource<Value: Sendable>: Sendable {
    private struct State {
        var subscribers: [(id: Int, subscriber: any Subscriber<Value>)] = []
        /// Every subscriber ever handed over, disposed or not.
        var everSubscribed: [any Subscriber<Value>] = []
        var nextID = 0
        var subscribeCount = 0
        var disposeCount = 0
    }

    private let state = Locked(State())

    init() {}

    /// The signal: each subscription registers its subscriber; its disposal unregisters it.
    var signal: Signal<Value> {
        Signal.create { [state] subscriber in
            let id: Int = state.withLock { state in
                state.nextID += 1
                state.subscribeCount += 1
                state.subscribers.append((state.nextID, subscriber))
                state.everSubscribed.append(subscriber)
                return state.nextID
            }
            return Disposable {
                state.withLock { state in
                    state.disposeCount += 1
                    state.subscribers.removeAll { $0.id == id }
                }
            }
        }
    }

    var subscribeCount: Int { state.withLock { $0.subscribeCount } }
    var disposeCount: Int { state.withLock { $0.disposeCount } }
    /// Subscriptions subscribed and not yet disposed.
    var liveCount: Int { state.withLock { $0.subscribers.count } }
    /// Whether it was subscribed and every subscription has been disposed.
    var isDisposed: Bool { state.withLock { $0.subscribeCount > 0 && $0.subscribers.isEmpty } }

    private var current: [any Subscriber<Value>] { state.withLock { $0.subscribers.map(\.subscriber) } }

    /// Sends from a thread whose current scheduler is the immediate one, as a source running
    /// on a scheduler does, so that operators subscribing in response do so inline.
    private func deliver(_ body: () -> Void) {
        ImmediateScheduler.shared.performAsCurrent(body)
    }

    func send(_ values: Value...) {
        deliver {
            for value in values {
                for subscriber in current { subscriber.sendNext(value) }
            }
        }
    }

    /// Sends to every subscriber ever handed over, as a source racing its own disposal
    /// would: what arrives after disposal must be dropped.
    func sendToAll(_ values: [Value], thenComplete: Bool = true) {
        let all = state.withLock { $0.everSubscribed }
        deliver {
            for subscriber in all {
                for value in values { subscriber.sendNext(value) }
                if thenComplete { subscriber.sendCompleted() }
            }
        }
    }

    func complete() {
        deliver { for subscriber in current { subscriber.sendCompleted() } }
    }

    func fail(_ error: any Error = TestError()) {
        deliver { for subscriber in current { subscriber.sendError(error) } }
    }
}

/// Subscribes `recorder` to `signal` inline and returns the subscription.
@discardableResult
func record<Value>(_ signal: Signal<Value>, into recorder: Recorder<Value>) -> Disposable {
    ImmediateScheduler.shared.performAsCurrent { signal.subscribe(recorder) }
}

/// Subscribes a new recorder to `signal` inline; returns it and the subscription.
func record<Value>(_ signal: Signal<Value>) -> (Recorder<Value>, Disposable) {
    let recorder = Recorder<Value>()
    let disposable = record(signal, into: recorder)
    return (recorder, disposable)
}

/// Checks that disposing `apply(source)` disposes the source, and that events the source
/// sends afterwards reach nobody.
func expectDisposalReachesSource<T: Sendable, U: Sendable>(
    sending values: [T], _ apply: (Signal<T>) -> Signal<U>, sourceLocation: SourceLocation = #_sourceLocation
) {
    let source = ManualSource<T>()
    let (recorder, disposable) = record(apply(source.signal))
    #expect(source.liveCount == 1, "subscribed to the source", sourceLocation: sourceLocation)
    let before = recorder.events.count
    disposable.dispose()
    #expect(source.isDisposed, "source disposed", sourceLocation: sourceLocation)
    source.sendToAll(values)
    #expect(recorder.events.count == before, "nothing after disposal", sourceLocation: sourceLocation)
}
