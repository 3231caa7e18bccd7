import Runnel

extension TCPConnection {
    /// The connection's lines as arrays (a copy each: for tests and tools, not the hot path),
    /// on the loop thread; completes when the connection closes. Subscribing makes the
    /// connection's delegate a forwarder to the subscriber and starts reading; disposing stops
    /// reading and removes that delegate. One subscriber at a time.
    public var lines: Signal<[UInt8]> {
        Signal.create { [self] subscriber in
            let forwarder = LineForwarder(subscriber)
            loop.execute { [self] in
                guard !forwarder.isCancelled else { return }
                delegate = forwarder
                startReading()
            }
            return Disposable { [self] in
                forwarder.isCancelled = true
                loop.execute { [self] in
                    guard delegate === forwarder else { return }
                    stopReading()
                    delegate = nil
                }
            }
        }
    }
}

/// Sends each line to a subscriber as an array; completes it when the connection closes.
private final class LineForwarder: TCPConnectionDelegate, @unchecked Sendable {
    private let subscriber: any Subscriber<[UInt8]>
    /// Set by disposal (any thread), read on the loop thread; a stale read only lets one more
    /// line through to a subscriber whose passthrough already drops it.
    var isCancelled: Bool {
        get { cancelled.withLock { $0 } }
        set { cancelled.withLock { $0 = newValue } }
    }
    private let cancelled = Locked(false)

    init(_ subscriber: any Subscriber<[UInt8]>) { self.subscriber = subscriber }

    func connection(_ connection: TCPConnection, didReadLine line: UnsafeRawBufferPointer) {
        subscriber.sendNext(Array(line))
    }

    func connectionDidClose(_ connection: TCPConnection) { subscriber.sendCompleted() }
}
