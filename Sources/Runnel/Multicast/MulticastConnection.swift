/// Shares one subscription to a source among many subscribers through a subject
/// (ReactiveCocoa's `RACMulticastConnection`).
///
/// Nothing is subscribed to the source until `connect()`. Subscribers of `signal` subscribe to
/// the subject, so they see only what the source sends after they subscribe (or what the
/// subject replays). Thread-safe.
///
/// Lifetime: one connection connects at most once. Disposing the connection's disposable
/// disposes the source subscription for good; a later `connect()` returns the same, disposed,
/// disposable and does not subscribe again, as in ReactiveCocoa.
public final class MulticastConnection<Value: Sendable>: @unchecked Sendable {
    /// The source the subject is connected to.
    private let source: Signal<Value>
    private let subject: Subject<Value>
    /// Holds the source subscription; returned by every `connect()`.
    private let connection = SerialDisposable()
    private let lock = Lock()
    /// Guarded by `lock`.
    private var hasConnected = false
    /// Guarded by `lock`: the subscribers of `autoconnect()` signals.
    private var autoconnectCount = 0

    init(source: Signal<Value>, subject: Subject<Value>) {
        self.source = source
        self.subject = subject
    }

    /// The multicast signal: subscribing to it subscribes to the subject.
    public var signal: Signal<Value> { subject }

    /// Subscribes the subject to the source, the first time only, and returns the
    /// connection's disposable; every later call returns that same disposable.
    @discardableResult
    public func connect() -> Disposable {
        let shouldConnect: Bool = lock.withLock {
            defer { hasConnected = true }
            return !hasConnected
        }
        if shouldConnect { connection.inner = source.subscribe(subject) }
        return connection
    }

    /// A signal that connects when it gets its first subscriber and disposes the connection
    /// when its last subscriber goes away (ReactiveCocoa's `autoconnect`). The connection is
    /// not made again afterwards: later subscribers get only what the subject replays.
    public func autoconnect() -> Signal<Value> {
        Signal.operatorSignal(name: "[\(source.name)] -autoconnect") { [self] downstream in
            lock.withLock { autoconnectCount += 1 }
            let subscription = subject.subscribe(downstream)
            let connection = connect()
            return Disposable { [self] in
                subscription.dispose()
                let last: Bool = lock.withLock {
                    autoconnectCount -= 1
                    return autoconnectCount == 0
                }
                if last { connection.dispose() }
            }
        }
    }
}
