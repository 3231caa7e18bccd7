import Runnel

/// A byte stream a line protocol reads: one with a connection's configuration, whose line
/// limits its `LineReader` takes. A `TCPConnection`, or a `RelayedStream` whose socket is on
/// another loop.
public protocol LineConnection: ByteStream {
    var configuration: TCPConnection.Configuration { get }
}

extension LineConnection {
    /// Makes `delegate` the receiver of this connection's lines: a `LineReader` with the
    /// configuration's line limits becomes the connection's delegate (nil: no delegate).
    /// Loop thread.
    public func readLines(into delegate: (any LineReaderDelegate)?) {
        self.delegate = delegate.map {
            LineReader(
                delegate: $0, maxLineLength: configuration.maxLineLength,
                deliversTLSHelloAsLine: configuration.deliversTLSHelloAsLine)
        }
    }
}

extension TCPConnection: LineConnection {}

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
                readLines(into: forwarder)
                startReading()
            }
            return Disposable { [self] in
                forwarder.isCancelled = true
                loop.execute { [self] in
                    guard (delegate as? LineReader)?.delegate === forwarder else { return }
                    stopReading()
                    delegate = nil
                }
            }
        }
    }
}

/// Sends each line to a subscriber as an array; completes it when the connection closes.
private final class LineForwarder: LineReaderDelegate, @unchecked Sendable {
    private let subscriber: any Subscriber<[UInt8]>
    /// Set by disposal (any thread), read on the loop thread; a stale read only lets one more
    /// line through to a subscriber whose passthrough already drops it.
    var isCancelled: Bool {
        get { cancelled.withLock { $0 } }
        set { cancelled.withLock { $0 = newValue } }
    }
    private let cancelled = Locked(false)

    init(_ subscriber: any Subscriber<[UInt8]>) { self.subscriber = subscriber }

    func connection(_ connection: any ByteStream, didReadLine line: UnsafeRawBufferPointer) {
        subscriber.sendNext(Array(line))
    }

    func connectionDidClose(_ connection: any ByteStream) { subscriber.sendCompleted() }
}
