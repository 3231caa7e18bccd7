#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A cold stream of values (ReactiveCocoa's `RACSignal`).
///
/// A signal does nothing until subscribed; each subscription runs its body anew. It sends any
/// number of values, then at most one of `error` or `completed`. Subjects are signals too:
/// hot, shared among their subscribers.
///
/// Thread rules: `subscribe` may be called from any thread. The body runs on the subscription
/// scheduler: inline when the calling thread has a `currentScheduler`, otherwise on
/// `QueueScheduler.background` (as ReactiveCocoa does). Events to one subscriber never
/// overlap.
public class Signal<Value: Sendable>: @unchecked Sendable {
    /// What a subscription runs: given the subscriber, set up and return what to dispose.
    public typealias Body = @Sendable (any Subscriber<Value>) -> Disposable?

    private let body: Body?
    /// Whether the body's subscriber serialises what it is sent (public `create`).
    private let serializesBody: Bool

    /// The debug name, set by `named(_:)` when `RUNNEL_DEBUG_SIGNAL_NAMES` is in the
    /// environment (ReactiveCocoa's `RAC_DEBUG_SIGNAL_NAMES`); empty otherwise.
    public let name: String

    init(name: String = "", serializes: Bool, body: Body?) {
        self.name = name
        self.body = body
        self.serializesBody = serializes
    }

    /// A signal whose subscriptions run `body` (ReactiveCocoa's `createSignal:`).
    ///
    /// `body` may send from any thread: the subscriber serialises events and drops any after a
    /// terminal event or disposal. Return a disposable that tears down what `body` set up, or
    /// nil; it runs when the subscription is disposed or terminates.
    public static func create(_ body: @escaping @Sendable (any Subscriber<Value>) -> Disposable?) -> Signal<Value> {
        Signal(serializes: true, body: body)
    }

    /// A signal for operators whose body is handed an already-serialised upstream: no lock is
    /// taken per event. The body must only send from events of serialised sources (or take
    /// its own lock when it merges several).
    @usableFromInline
    static func operatorSignal(
        name: @autoclosure () -> String = "", _ body: @escaping @Sendable (any Subscriber<Value>) -> Disposable?
    ) -> Signal<Value> {
        Signal(name: SignalNames.enabled ? name() : "", serializes: false, body: body)
    }

    /// Subscribes `subscriber` and returns the subscription's disposable
    /// (ReactiveCocoa's `subscribe:`).
    @discardableResult
    public func subscribe(_ subscriber: any Subscriber<Value>) -> Disposable {
        let disposable = CompoundDisposable()
        let passthrough = PassthroughSubscriber(
            subscriber, disposable: disposable, lock: serializesBody ? Lock(recursive: true) : nil)
        guard let body else { return disposable }
        if currentScheduler != nil {
            disposable.add(body(passthrough))
        } else {
            disposable.add(
                QueueScheduler.background.schedule {
                    disposable.add(body(passthrough))
                })
        }
        return disposable
    }

    /// A copy of this signal carrying `name`, when debug names are enabled
    /// (`RUNNEL_DEBUG_SIGNAL_NAMES` set); otherwise this signal. The name is only built when
    /// it will be kept.
    public func named(_ name: @autoclosure () -> String) -> Signal<Value> {
        guard SignalNames.enabled, let body else { return self }
        return Signal(name: name(), serializes: serializesBody, body: body)
    }
}

extension Signal: CustomStringConvertible {
    public var description: String { name.isEmpty ? "<Signal<\(Value.self)>>" : "<Signal \(name)>" }
}

/// Whether signals keep debug names.
enum SignalNames {
    static let enabled: Bool = getenv("RUNNEL_DEBUG_SIGNAL_NAMES") != nil
}
