import CLibUV
import Runnel
import RunnelBytes

/// One TCP connection on a loop: the socket, its lifecycle, and its output queue. A
/// `ByteStream`: its delegate gets the bytes as read; a line protocol puts a `LineReader` in
/// front of its handler.
///
/// Reading (`TCPConnection+Reading.swift`): after `startReading()`, each read goes to the
/// delegate while the connection is open, pointing into the loop's read buffer (valid only
/// during the call), at most `readBudgetPerTurn` bytes per loop turn. End of input from the
/// peer starts `closeAfterFlush`.
///
/// Writing (`TCPConnection+Writing.swift`): `write(copying:)` appends into a shared chunk
/// (small writes coalesce); `write(_: ByteBuffer)` queues a reference, without copying; the
/// bookkeeping is a `WriteQueue`. Queued output is written once per loop iteration (the loop's
/// check phase, after this iteration's I/O callbacks): straight to the socket when nothing
/// earlier is still queued in libuv, the rest as one `uv_write` of several `uv_buf_t`s.
///
/// Closing: `close()`, an error, or the end of `closeAfterFlush`, whichever comes first, closes
/// the handle once; then the `onClose` hooks run (once each) and `connectionDidClose` is sent.
///
/// Filtering: a connection given a `ConnectionFilter` (TLS) before it reads has a
/// `FilterStage` pass each read through it before the delegate, and each flush's queued output
/// through it before the socket; the delegate and the writers see only application bytes.
///
/// Thread rules: `close()`, `closeAfterFlush(timeout:)` and `onClose(_:)` may be called from
/// any thread; everything else (writes, `delegate`, `startReading`, `pendingBytes`) only on
/// the loop thread (delegate calls and accepted connections are delivered there).
///
/// Lifetime rule: the connection is retained through `handle->data` from `uv_tcp_init` until
/// the close callback, which releases it and frees the handle, so an open connection lives
/// even when no one else holds it; its delegate is released after `connectionDidClose`.
public final class TCPConnection: HandleOwner, @unchecked Sendable {
    /// Socket options of a connection, and the limits of the line protocol a `LineReader`
    /// reads from it (`readLines(into:)`).
    public struct Configuration: Sendable {
        /// The longest line accepted, in bytes before the `\n` (a `\r` counts).
        public var maxLineLength: Int
        /// Sets `TCP_NODELAY`.
        public var noDelay: Bool
        /// How long to keep flushing output after the peer's end of input before closing.
        public var lingerAfterEndOfInput: Duration
        /// Whether a first read that starts like a TLS handshake goes to the line delegate at
        /// once as one line (`LineReader`).
        public var deliversTLSHelloAsLine: Bool

        public init(
            maxLineLength: Int = 1 << 20, noDelay: Bool = true, lingerAfterEndOfInput: Duration = .seconds(5),
            deliversTLSHelloAsLine: Bool = false
        ) {
            precondition(maxLineLength > 0)
            self.maxLineLength = maxLineLength
            self.noDelay = noDelay
            self.lingerAfterEndOfInput = lingerAfterEndOfInput
            self.deliversTLSHelloAsLine = deliversTLSHelloAsLine
        }
    }

    enum State { case open, draining, closing, closed }

    let loop: LoopScheduler
    let handle: UnsafeMutablePointer<uv_tcp_t>
    /// The limits this connection was made with.
    public let configuration: Configuration
    /// The peer's address, "host:port" or "[v6-host]:port" (empty if unknown).
    public private(set) var remoteAddress = ""
    /// Receives the input (loop thread). Held strongly until the connection has closed.
    public var delegate: (any ByteStreamDelegate)?

    // The state touched per line and per delivery. Swift checks exclusive access to a class's
    // stored `var`s at run time, a measurable share of a delivery's cost (bench/README.md);
    // these are the loop thread's alone and never accessed overlapping, so they go unchecked.
    @exclusivity(unchecked) var state = State.open
    /// The output accepted and not yet confirmed handed to the kernel.
    @exclusivity(unchecked) @usableFromInline var queue = WriteQueue()
    @exclusivity(unchecked) var isQueuedForFlush = false

    /// Bytes accepted by `write` and not yet handed to the kernel (loop thread).
    @inlinable public var pendingBytes: Int { queue.pendingBytes }

    var isReading = false
    /// Reading is stopped in libuv for the rest of this loop turn (see `readBudgetPerTurn`);
    /// `isReading` stays true.
    var pausedForTurn = false
    var readThisTurn = 0
    var readTurn = 0
    var inputEnded = false
    /// A `uv_tcp_connect` is in progress (client connections).
    var isConnecting = false

    /// The byte-stream filter (TLS) and its plumbing, if any; set once, before reading starts.
    var filterStage: FilterStage?

    /// What `whenUnsentBytes(fallTo:_:)` waits for: the threshold and the action.
    var unsentWaiter: (threshold: Int, action: () -> Void)?

    // Closing.
    private let hooks = CloseHooks()
    private var drainTimer: Disposable?
    private var shutdownSent = false
    /// Set by `postponeCloseAtEndOfInput`.
    var closePostponed = false

    /// A new, unconnected TCP handle on `loop` (loop thread).
    init(loop: LoopScheduler, configuration: Configuration) throws {
        self.loop = loop
        self.configuration = configuration
        handle = .allocate(capacity: 1)
        loop.handles.ownerCreated()
        // No handle may open once shutdown has begun: nothing would close it.
        let status = loop.isShuttingDown ? UV_ECANCELED.rawValue : uv_tcp_init(loop.uvLoop, handle)
        if status < 0 {
            state = .closed
            handle.deallocate()
            throw UVError(code: status, operation: "uv_tcp_init")
        }
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.handles.register(self)
    }

    deinit {
        loop.handles.ownerDestroyed()
    }

    var stream: UnsafeMutablePointer<uv_stream_t> { runnel_tcp_as_stream(handle) }

    /// Finishes setting up an accepted or connected socket.
    func didConnect() {
        if configuration.noDelay { uv_tcp_nodelay(handle, 1) }
        if let address = SocketAddress.of(handle, uv_tcp_getpeername) {
            remoteAddress = SocketAddress.describe(address)
        }
    }

    /// Whether the connection is open for writing (not closing, closed, or draining).
    public var isOpen: Bool { state == .open }

    /// Whether input is still taken (open or draining).
    var isReadable: Bool { state == .open || state == .draining }

    // MARK: Filtering

    /// Puts `filter` between the socket and everything above it: the delegate then reads, and
    /// writers write, the filter's application bytes. Loop thread, before anything was read
    /// or written; starts the handshake's timeout.
    public func attach(filter: any ConnectionFilter) {
        loop.assertOnLoopThread()
        precondition(filterStage == nil && !isReading && pendingBytes == 0, "a filter goes on a fresh connection")
        guard state == .open else { return }
        filterStage = FilterStage(filter: filter, on: self)
        // A client's filter speaks first (a TLS ClientHello).
        if filter.pendingOutputCount > 0 { queueForFlush() }
    }

    // MARK: Closing

    /// Runs `hook` once when the connection closes (at once if it has). Any thread; the hook
    /// runs on the loop thread.
    public func onClose(_ hook: @escaping @Sendable () -> Void) { hooks.add(hook) }

    /// Closes now, dropping output not yet written. Any thread.
    public func close() {
        if loop.isOnLoopThread {
            closeNow()
        } else {
            loop.execute { [self] in closeNow() }
        }
    }

    /// Closes gracefully: refuses further writes and input lines, writes what is pending,
    /// sends a FIN and waits for the peer's, then closes; closes anyway once a `timeout` passes
    /// in which the peer read nothing of it (one that still reads gets its last line, however
    /// much was pending: a slow consumer's output is bounded where it was queued). Any thread.
    public func closeAfterFlush(timeout: Duration) {
        guard loop.isOnLoopThread else {
            loop.execute { [self] in closeAfterFlush(timeout: timeout) }
            return
        }
        guard state == .open else { return }
        state = .draining
        closeUnlessRead(within: timeout, since: sentBytes)
        if !inputEnded && !isReading { startReading() }
        continueDrain()
    }

    /// Closes after `timeout` unless the kernel took more of the output than `sent` meanwhile;
    /// then waits again.
    private func closeUnlessRead(within timeout: Duration, since sent: UInt64) {
        drainTimer = loop.after(delay: timeout) { [self] in
            guard state == .draining, !shutdownSent, sentBytes != sent else { return closeNow() }
            closeUnlessRead(within: timeout, since: sentBytes)
        }
    }

    public func postponeCloseAtEndOfInput() { closePostponed = true }

    /// How long a drained connection waits for the peer's FIN after sending its own.
    static let finLinger: Duration = .milliseconds(500)

    private func lingerAfterFIN() {
        guard state == .draining else { return }
        drainTimer?.dispose()
        drainTimer = loop.after(delay: Self.finLinger) { [self] in closeNow() }
    }

    /// Takes the next step of a graceful close once nothing is left to write: a TLS filter's
    /// goodbye first (flushed, then back here), then the close if the peer's input has ended,
    /// else one FIN, after which `lingerAfterFIN` waits for the peer's.
    func continueDrain() {
        guard state == .draining, pendingBytes == 0 else { return }
        // A filter's goodbye goes out before the FIN; its write's completion comes back here.
        if let filterStage, filterStage.finish() {
            flush()
            return
        }
        if inputEnded {
            closeNow()
            return
        }
        guard !shutdownSent else { return }
        shutdownSent = true
        let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        request.pointee.data = Unmanaged.passRetained(self).toOpaque()
        let status = uv_shutdown(request, stream) { request, status in
            let connection = Unmanaged<TCPConnection>.fromOpaque(request!.pointee.data).takeRetainedValue()
            request!.deallocate()
            // Wait briefly for the peer's end of input, so its last requests do not meet a
            // reset that would discard what we sent; the FIN failing closes at once.
            if status < 0 {
                connection.closeNow()
            } else {
                connection.lingerAfterFIN()
            }
        }
        if status < 0 {
            Unmanaged.passUnretained(self).release()
            request.deallocate()
            closeNow()
        }
    }

    func closeForShutdown() { closeNow() }

    /// Closes the handle (loop thread). Idempotent.
    func closeNow() {
        guard state == .open || state == .draining else { return }
        state = .closing
        drainTimer?.dispose()
        drainTimer = nil
        filterStage?.cancelHandshakeTimer()
        if isReading {
            uv_read_stop(stream)
            isReading = false
        }
        uv_close(runnel_tcp_as_handle(handle)) { handle in
            let connection = Unmanaged<TCPConnection>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            handle!.deallocate()
            connection.didClose()
        }
    }

    /// After the close callback: every pending write has been called back (cancelled).
    private func didClose() {
        state = .closed
        queue.removeAll()
        unsentWaiter = nil
        filterStage = nil
        loop.handles.unregister(self)
        hooks.run()
        let delegate = self.delegate
        self.delegate = nil
        delegate?.connectionDidClose(self)
    }
}

extension TCPConnection: ByteStream {}
