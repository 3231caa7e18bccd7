import CLibUV
import Runnel

/// One TCP connection on a loop: input framed into lines, output queued and batched.
///
/// Reading: after `startReading()`, input is framed by a `LineFramer` (or, with `framesLines`
/// off, handed to `connection(_:didRead:)` as read): split on `\n` (a `\r`
/// before it is stripped), each complete line going to `delegate` as a pointer valid only
/// during the call, with no allocation per line: lines wholly inside one read point straight
/// into the loop's read buffer; only a line split across reads is copied. A line longer than
/// `configuration.maxLineLength` is thrown away as it streams in (never buffered whole) and
/// reported with `didDiscardLongLine`. End of input from the peer starts `closeAfterFlush`.
///
/// Writing: `write(copying:)` appends into a shared chunk (small writes coalesce);
/// `write(_: ByteBuffer)` queues a reference, without copying. Queued output is written once
/// per loop iteration (the loop's check phase, after this iteration's I/O callbacks): straight
/// to the socket when nothing earlier is still queued in libuv, the rest as one `uv_write` of
/// several `uv_buf_t`s. `pendingBytes` counts bytes accepted by write and not yet handed to
/// the kernel.
///
/// Closing: `close()`, an error, or the end of `closeAfterFlush`, whichever comes first, closes
/// the handle once; then the `onClose` hooks run (once each) and `connectionDidClose` is sent.
///
/// Filtering: a connection given a `ConnectionFilter` (TLS) before it reads passes each read
/// through it before framing, and each flush's queued output through it before the socket;
/// the delegate and the writers see only application bytes. Until the filter's handshake
/// finishes, queued output waits; a handshake not finished within the filter's timeout, or a
/// filter failure, closes the connection; `closeAfterFlush` sends the filter's goodbye
/// (close_notify) before the FIN.
///
/// Thread rules: `close()`, `closeAfterFlush(timeout:)` and `onClose(_:)` may be called from
/// any thread; everything else (writes, `delegate`, `startReading`, `pendingBytes`) only on
/// the loop thread (delegate calls and accepted connections are delivered there).
///
/// Lifetime rule: the connection is retained through `handle->data` from `uv_tcp_init` until
/// the close callback, which releases it and frees the handle, so an open connection lives
/// even when no one else holds it; its delegate is released after `connectionDidClose`.
public final class TCPConnection: HandleOwner, @unchecked Sendable {
    /// Limits and socket options of a connection.
    public struct Configuration: Sendable {
        /// The longest line accepted, in bytes before the `\n` (a `\r` counts).
        public var maxLineLength: Int
        /// Sets `TCP_NODELAY`.
        public var noDelay: Bool
        /// How long to keep flushing output after the peer's end of input before closing.
        public var lingerAfterEndOfInput: Duration
        /// Whether input is framed into lines; when false, the delegate gets the bytes as they
        /// are read (`connection(_:didRead:)`), for protocols that frame their own (HTTP).
        public var framesLines: Bool
        /// Whether a first read that starts like a TLS handshake (byte 0x16, which no text
        /// line starts with) goes to the delegate at once as one line, instead of waiting for a
        /// `\n` a TLS client never sends: a plaintext line protocol then answers it (an error
        /// the client's TLS library reports at once) instead of leaving the client hanging.
        public var deliversTLSHelloAsLine: Bool

        public init(
            maxLineLength: Int = 1 << 20, noDelay: Bool = true, lingerAfterEndOfInput: Duration = .seconds(5),
            framesLines: Bool = true, deliversTLSHelloAsLine: Bool = false
        ) {
            precondition(maxLineLength > 0)
            self.maxLineLength = maxLineLength
            self.noDelay = noDelay
            self.lingerAfterEndOfInput = lingerAfterEndOfInput
            self.framesLines = framesLines
            self.deliversTLSHelloAsLine = deliversTLSHelloAsLine
        }
    }

    private enum State { case open, draining, closing, closed }

    /// The size of the chunks small writes are copied into.
    static let chunkSize = 64 * 1024

    let loop: LoopScheduler
    let handle: UnsafeMutablePointer<uv_tcp_t>
    /// The limits this connection was made with.
    public let configuration: Configuration
    /// The peer's address, "host:port" or "[v6-host]:port" (empty if unknown).
    public private(set) var remoteAddress = ""
    /// Receives the lines (loop thread). Held strongly until the connection has closed.
    public var delegate: (any TCPConnectionDelegate)?

    // The state touched per line and per delivery. Swift checks exclusive access to a class's
    // stored `var`s at run time, a measurable share of a delivery's cost (bench/README.md);
    // these are the loop thread's alone and never accessed overlapping, so they go unchecked.
    @exclusivity(unchecked) private var state = State.open
    @exclusivity(unchecked) private var chunk: WriteChunk?
    @exclusivity(unchecked) private var isQueuedForFlush = false
    /// Bytes accepted by `write` and not yet handed to the kernel (loop thread).
    @exclusivity(unchecked) public private(set) var pendingBytes = 0

    private var isReading = false
    /// Reading is stopped in libuv for the rest of this loop turn (see `readBudgetPerTurn`);
    /// `isReading` stays true.
    private var pausedForTurn = false
    private var readThisTurn = 0
    private var readTurn = 0
    private var inputEnded = false
    /// Nothing has been read yet (see `Configuration.deliversTLSHelloAsLine`).
    private var awaitsFirstRead = true
    /// A `uv_tcp_connect` is in progress (client connections).
    var isConnecting = false

    /// Framing, behind a pointer: it is mutated per read while it calls the delegate, which may
    /// call back into this connection (`skipLines`, `reset`); freed in `deinit`.
    private let framer: UnsafeMutablePointer<LineFramer>

    // Output.
    private var segments: [uv_buf_t] = []
    private var segmentOwners: [AnyObject] = []
    @exclusivity(unchecked) private var segmentBytes = 0
    private var spareRequests: [WriteRequest] = []

    /// The byte-stream filter (TLS), if any; set once, before reading starts.
    private var filter: (any ConnectionFilter)?
    /// Closes the connection if the filter's handshake has not finished in time.
    private var handshakeTimer: Disposable?
    /// The filter's goodbye has been queued (graceful close).
    private var filterFinished = false

    /// What `whenUnsentBytes(fallTo:_:)` waits for: the threshold and the action.
    private var unsentWaiter: (threshold: Int, action: () -> Void)?

    // Closing.
    private let hooks = Locked<[@Sendable () -> Void]?>([])
    private var drainTimer: Disposable?
    private var shutdownSent = false

    /// A new, unconnected TCP handle on `loop` (loop thread).
    init(loop: LoopScheduler, configuration: Configuration) throws {
        self.loop = loop
        self.configuration = configuration
        framer = .allocate(capacity: 1)
        framer.initialize(to: LineFramer(maxLineLength: configuration.maxLineLength))
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
        framer.deinitialize(count: 1)
        framer.deallocate()
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

    // MARK: Filtering

    /// Puts `filter` between the socket and everything above it: the delegate then reads, and
    /// writers write, the filter's application bytes. Loop thread, before anything was read
    /// or written; starts the handshake's timeout.
    public func attach(filter: any ConnectionFilter) {
        loop.assertOnLoopThread()
        precondition(self.filter == nil && !isReading && pendingBytes == 0, "a filter goes on a fresh connection")
        guard state == .open else { return }
        self.filter = filter
        handshakeTimer = loop.after(delay: filter.handshakeTimeout) { [self] in
            if self.filter?.isEstablished == false { closeNow() }
        }
        // A client's filter speaks first (a TLS ClientHello).
        if filter.pendingOutputCount > 0 { queueForFlush() }
    }

    /// `consume` for a filtered connection: the filter decrypts into the loop's read buffer
    /// (which the ciphertext has left once the filter took it), and the application bytes are
    /// framed as usual; what the filter has for the peer (handshake, alerts) is flushed.
    @inline(never)
    private func consumeFiltered(_ bytes: UnsafeRawBufferPointer, through filter: any ConnectionFilter) {
        let wasEstablished = filter.isEstablished
        let scratch = UnsafeMutableRawBufferPointer(start: loop.io.readBuffer, count: loop.io.readBufferSize)
        let outcome = filter.receive(bytes, scratch: scratch) { plaintext in
            consumeFramed(plaintext)
            return state == .open || state == .draining
        }
        if !wasEstablished && filter.isEstablished {
            handshakeTimer?.dispose()
            handshakeTimer = nil
        }
        switch outcome {
        case .open:
            // Handshake messages to answer, or output that waited for the handshake.
            if filter.pendingOutputCount > 0 || (filter.isEstablished && !wasEstablished && pendingBytes > 0) {
                queueForFlush()
            }
        case .ended:
            readEnded(UV_EOF.rawValue)
        case .failed:
            sendFilterOutputAndClose(filter)
        }
    }

    /// A failed filter's last words (a TLS alert) are offered to the kernel once, without
    /// waiting, then the connection closes.
    private func sendFilterOutputAndClose(_ filter: any ConnectionFilter) {
        if state == .open || state == .draining, filter.pendingOutputCount > 0, handle.pointee.write_queue_size == 0 {
            let scratch = UnsafeMutableRawBufferPointer(start: loop.io.readBuffer, count: loop.io.readBufferSize)
            let count = filter.takeOutput(into: scratch)
            var buffer = uv_buf_t(base: scratch.baseAddress!.assumingMemoryBound(to: CChar.self), len: count)
            _ = uv_try_write(stream, &buffer, 1)
        }
        closeNow()
    }

    /// Passes the queued output through the filter, at flush time. Once the handshake is done,
    /// the queued application bytes are sealed and replaced by the filter's output, and the
    /// caller writes `segments` as usual (returns true). Before, the application bytes stay
    /// queued, the filter's own output (the handshake) goes out with a write of its own, and
    /// the caller writes nothing more (returns false).
    @inline(never)
    private func passThrough(_ filter: any ConnectionFilter) -> Bool {
        guard filter.isEstablished else {
            guard filter.pendingOutputCount > 0 else { return false }
            var held = ([uv_buf_t](), [AnyObject](), 0)
            swap(&held.0, &segments)
            swap(&held.1, &segmentOwners)
            swap(&held.2, &segmentBytes)
            appendFilterOutput(filter)
            writeSegments()
            swap(&held.0, &segments)
            swap(&held.1, &segmentOwners)
            swap(&held.2, &segmentBytes)
            return false
        }
        if !segments.isEmpty {
            for segment in segments where !filter.seal(UnsafeRawBufferPointer(start: segment.base, count: segment.len))
            {
                sendFilterOutputAndClose(filter)
                return false
            }
            pendingBytes -= segmentBytes
            segments.removeAll(keepingCapacity: true)
            segmentOwners.removeAll(keepingCapacity: true)
            segmentBytes = 0
        }
        appendFilterOutput(filter)
        return true
    }

    /// Moves the filter's output into write chunks, queued as segments.
    private func appendFilterOutput(_ filter: any ConnectionFilter) {
        while filter.pendingOutputCount > 0 {
            if chunk == nil || chunk!.available == 0 {
                sealChunk()
                chunk = loop.io.takeChunk(minimumCapacity: 0)
            }
            let target = chunk!
            let count = filter.takeOutput(
                into: UnsafeMutableRawBufferPointer(start: target.base + target.used, count: target.available))
            guard count > 0 else { break }
            target.used += count
            pendingBytes += count
        }
        sealChunk()
    }

    // MARK: Reading

    /// Starts delivering lines to `delegate` (loop thread).
    public func startReading() {
        loop.assertOnLoopThread()
        guard state == .open || state == .draining, !isReading, !inputEnded else { return }
        if beginReading() < 0 {
            closeNow()
        } else {
            isReading = true
        }
    }

    private func beginReading() -> Int32 {
        uv_read_start(
            stream,
            { handle, _, buffer in
                // libuv asks for a buffer right before each read: the turn's work starts here.
                let io = Unmanaged<TCPConnection>.fromOpaque(handle!.pointee.data).takeUnretainedValue().loop.io
                io.noteAwake()
                buffer!.pointee = uv_buf_t(
                    base: io.readBuffer.assumingMemoryBound(to: CChar.self), len: io.readBufferSize)
            },
            { stream, count, buffer in
                let connection = Unmanaged<TCPConnection>.fromOpaque(stream!.pointee.data).takeUnretainedValue()
                if count > 0 {
                    connection.consume(UnsafeRawBufferPointer(start: buffer!.pointee.base, count: count))
                    connection.chargeRead(count)
                } else if count < 0 {
                    connection.readEnded(Int32(count))
                }
            })
    }

    /// Stops delivering lines until `startReading()` (loop thread).
    public func stopReading() {
        loop.assertOnLoopThread()
        guard isReading else { return }
        uv_read_stop(stream)
        isReading = false
        pausedForTurn = false
    }

    /// Bytes one connection may read in one loop turn before it yields until the next.
    ///
    /// libuv reads a readable socket up to 32 times in a row; a publisher with a full socket
    /// would have each of its lines fanned out to every subscriber before any of that output
    /// reached the kernel, leaving megabytes queued in user space per subscriber. Yielding
    /// after a bounded read lets the check phase flush what those lines produced first.
    public static let readBudgetPerTurn = 64 * 1024

    /// Counts a read against this turn's budget; past it, reading pauses until the loop's
    /// check phase has flushed this turn's output (`resumeAfterTurn`).
    private func chargeRead(_ count: Int) {
        if readTurn != loop.io.turn {
            readTurn = loop.io.turn
            readThisTurn = 0
        }
        readThisTurn += count
        guard readThisTurn >= Self.readBudgetPerTurn, isReading, !pausedForTurn else { return }
        uv_read_stop(stream)
        pausedForTurn = true
        loop.io.resumeReadingNextTurn(self)
    }

    /// Resumes reading paused by `chargeRead` (the loop's check phase, after the flush).
    func resumeAfterTurn() {
        guard pausedForTurn else { return }
        pausedForTurn = false
        guard isReading, state == .open || state == .draining, !inputEnded else { return }
        if beginReading() < 0 { closeNow() }
    }

    /// Hands what was read to the filter, if any, else straight to the framing: one branch
    /// per read.
    @inline(__always)
    private func consume(_ bytes: UnsafeRawBufferPointer) {
        if let filter {
            consumeFiltered(bytes, through: filter)
        } else {
            if awaitsFirstRead && deliversFirstReadAsTLSHello(bytes) { return }
            consumeFramed(bytes)
        }
    }

    /// The first read's check (`Configuration.deliversTLSHelloAsLine`): true when `bytes` went
    /// to the delegate as one line.
    @inline(never)
    private func deliversFirstReadAsTLSHello(_ bytes: UnsafeRawBufferPointer) -> Bool {
        awaitsFirstRead = false
        guard configuration.deliversTLSHelloAsLine, configuration.framesLines, bytes.first == 0x16,
            state == .open, let delegate
        else { return false }
        delegate.connection(self, didReadLine: bytes)
        return true
    }

    /// Frames `bytes` into lines for the delegate. With no delegate, lines are dropped; a split
    /// line is still tracked, so the next delegate starts at a line boundary.
    private func consumeFramed(_ bytes: UnsafeRawBufferPointer) {
        guard let delegate else {
            framer.pointee.skipLines(bytes)
            return
        }
        guard configuration.framesLines else {
            // Unframed input is handled only while open, like a line (see below).
            if state == .open { delegate.connection(self, didRead: bytes) }
            return
        }
        framer.pointee.consume(bytes) { piece in
            // One state check per line, before it is handled: once closing (say the delegate
            // closed the connection on the previous line), the rest of the read is dropped;
            // while draining, lines are read (so the peer's FIN is seen) but not handled.
            guard state == .open else { return state == .draining }
            switch piece {
            case .line(let line): delegate.connection(self, didReadLine: line)
            case .tooLong(let count): delegate.connection(self, didDiscardLongLine: count)
            }
            return true
        }
    }

    private func readEnded(_ status: Int32) {
        isReading = false
        inputEnded = true
        if status == UV_EOF.rawValue {
            uv_read_stop(stream)
            delegate?.connectionDidEndInput(self)
            if state == .open {
                closeAfterFlush(timeout: configuration.lingerAfterEndOfInput)
            } else {
                continueDrain()
            }
        } else {
            closeNow()
        }
    }

    // MARK: Writing

    /// Queues a copy of `bytes`. Returns false (dropping them) once the connection is no
    /// longer open. Loop thread.
    @discardableResult
    public func write(copying bytes: UnsafeRawBufferPointer) -> Bool {
        loop.assertOnLoopThread()
        guard state == .open else { return false }
        append(bytes)
        requestFlush()
        return true
    }

    /// Queues a copy of `bytes` followed by a `\n`. Loop thread.
    @discardableResult
    public func writeLine(copying bytes: UnsafeRawBufferPointer) -> Bool {
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        return writeLine(copying: bytes, none, none)
    }

    /// Queues copies of `first`, `second` and `third`, back to back, then a `\n`: one room
    /// check, one copy each and one flush request where four `write(copying:)` calls would pay
    /// for each of those four times (an event line is a prefix, a value and a suffix). Inlined
    /// into its callers: it is the body of every delivery. Loop thread.
    @discardableResult
    @inline(__always)
    public func writeLine(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer
    ) -> Bool {
        write(copying: first, second, third, UnsafeRawBufferPointer(start: nil, count: 0), lineEnd: true)
    }

    /// Queues copies of the four pieces, back to back, as `writeLine(copying:_:_:)` does, with
    /// no line end (a WebSocket frame: its head, then an event line's three pieces). Loop thread.
    @discardableResult
    @inline(__always)
    public func write(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer
    ) -> Bool {
        write(copying: first, second, third, fourth, lineEnd: false)
    }

    @inline(__always)
    private func write(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer, lineEnd: Bool
    ) -> Bool {
        loop.assertOnLoopThread()
        guard state == .open else { return false }
        let total = first.count &+ second.count &+ third.count &+ fourth.count &+ (lineEnd ? 1 : 0)
        if let chunk, chunk.capacity &- chunk.used >= total {
            var target = chunk.base + chunk.used
            if first.count > 0 {
                target.copyMemory(from: first.baseAddress!, byteCount: first.count)
                target += first.count
            }
            if second.count > 0 {
                target.copyMemory(from: second.baseAddress!, byteCount: second.count)
                target += second.count
            }
            if third.count > 0 {
                target.copyMemory(from: third.baseAddress!, byteCount: third.count)
                target += third.count
            }
            if fourth.count > 0 { target.copyMemory(from: fourth.baseAddress!, byteCount: fourth.count) }
            if lineEnd { chunk.base.storeBytes(of: 10, toByteOffset: chunk.used &+ total &- 1, as: UInt8.self) }
            chunk.used &+= total
            pendingBytes &+= total
            requestFlush()
        } else {
            appendPieces(first, second, third, fourth, lineEnd: lineEnd)
        }
        return true
    }

    /// `write(copying:_:_:_:lineEnd:)` when the open chunk has no room: the pieces may span
    /// chunks.
    @inline(never)
    private func appendPieces(
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer, lineEnd: Bool
    ) {
        append(first)
        append(second)
        append(third)
        append(fourth)
        if lineEnd {
            var newline: UInt8 = 10
            withUnsafeBytes(of: &newline) { append($0) }
        }
        requestFlush()
    }

    /// Queues `buffer` itself, without copying its bytes; it is kept alive until written.
    /// Loop thread.
    @discardableResult
    public func write(_ buffer: ByteBuffer) -> Bool {
        loop.assertOnLoopThread()
        guard state == .open else { return false }
        guard buffer.count > 0 else { return true }
        // A small buffer costs less to copy into the chunk than to carry as a segment of its own.
        if buffer.count <= Self.copyThreshold {
            append(buffer.bytes)
            requestFlush()
            return true
        }
        sealChunk()
        segments.append(
            uv_buf_t(
                base: UnsafeMutableRawPointer(mutating: buffer.bytes.baseAddress!).assumingMemoryBound(to: CChar.self),
                len: buffer.count))
        segmentOwners.append(buffer.storage)
        segmentBytes += buffer.count
        pendingBytes += buffer.count
        requestFlush()
        return true
    }

    private func append(_ bytes: UnsafeRawBufferPointer) {
        pendingBytes += bytes.count
        var rest = bytes
        while !rest.isEmpty {
            if chunk == nil || chunk!.available == 0 {
                sealChunk()
                chunk = loop.io.takeChunk(minimumCapacity: rest.count)
            }
            let copied = chunk!.append(rest)
            rest = UnsafeRawBufferPointer(rebasing: rest[copied...])
        }
    }

    /// Turns the chunk's not-yet-queued bytes into a segment.
    private func sealChunk() {
        guard let chunk, chunk.used > chunk.sealed else { return }
        let count = chunk.used - chunk.sealed
        segments.append(uv_buf_t(base: (chunk.base + chunk.sealed).assumingMemoryBound(to: CChar.self), len: count))
        segmentOwners.append(chunk)
        segmentBytes += count
        chunk.sealed = chunk.used
        if chunk.available == 0 { self.chunk = nil }
    }

    /// Buffers up to this size are copied rather than referenced; the server's deliveries hand
    /// values up to it to be copied and larger ones by reference. Copying a buffer this small
    /// costs the server less CPU than a segment of its own (one more iovec for the kernel).
    public static let copyThreshold = 4096
    /// Queued bytes past which a connection is flushed at once rather than in the check phase,
    /// so a large burst handled in one loop turn reaches the kernel as it is produced.
    static let eagerFlushBytes = 64 * 1024

    /// Bytes written but not yet handed to the kernel: queued here or waiting in libuv's write
    /// queue. What a slow consumer piles up; the daemon's `max_pending_bytes` is checked
    /// against it. Loop thread.
    public var unsentBytes: Int {
        let local = segmentBytes + (chunk.map { $0.used - $0.sealed } ?? 0)
        // The handle's documented read-only field, read in place: this runs once per delivery,
        // and `uv_stream_get_write_queue_size` is a call into libuv to return it.
        return local + Int(handle.pointee.write_queue_size)
    }

    /// Whether `unsentBytes` is over `limit`. The same answer, cheaper: `pendingBytes` is never
    /// less than `unsentBytes` (it also counts what libuv has handed to the kernel from a write
    /// still in progress) and sits in the state every write touches, while `unsentBytes` follows
    /// three pointers (the open chunk's counters, the handle) that miss the cache when one
    /// value fans out to many connections: 7% of the server's time at 100 subscribers, where
    /// this is asked once per delivery. Loop thread.
    @inlinable
    public func hasUnsentBytes(over limit: Int) -> Bool {
        pendingBytes > limit && unsentBytes > limit
    }

    /// Runs `action` once, on the loop thread, as soon as `unsentBytes` is at most `threshold`:
    /// at once if it already is, else when a write completes that brings it there. A new call
    /// replaces a waiting one; a connection that closes first drops it. With `stopReading()`
    /// it lets a caller stop taking requests while their replies pile up unread, and take them
    /// again once the peer has read enough. Loop thread.
    public func whenUnsentBytes(fallTo threshold: Int, _ action: @escaping () -> Void) {
        loop.assertOnLoopThread()
        guard state == .open || state == .draining else { return }
        if !hasUnsentBytes(over: threshold) {
            unsentWaiter = nil
            action()
        } else {
            unsentWaiter = (threshold, action)
        }
    }

    @inline(__always)
    private func requestFlush() {
        if segmentBytes + (chunk.map { $0.used - $0.sealed } ?? 0) >= Self.eagerFlushBytes {
            sealChunk()
            if let filter, !passThrough(filter) { return }
            writeSegments()
            return
        }
        queueForFlush()
    }

    /// Asks for a flush in this turn's check phase.
    @inline(__always)
    private func queueForFlush() {
        guard !isQueuedForFlush else { return }
        isQueuedForFlush = true
        loop.io.needsFlush(self)
    }

    /// Writes everything queued (the loop's check phase). When libuv holds no earlier output
    /// for the socket, the bytes go straight to the kernel with `uv_try_write`: no request, no
    /// callback in the next turn, and no `epoll_ctl` (libuv re-arms the poll after every
    /// completed `uv_write`, one system call per connection per turn, a fifth of the server's
    /// system-call time when values go out one at a time). What the kernel does not take goes
    /// out with one `uv_write`. Write completion is reported here, at the top of the check
    /// phase, never inside a caller's `write`.
    func flush() {
        isQueuedForFlush = false
        guard state == .open || state == .draining else { return }
        sealChunk()
        if let filter, !passThrough(filter) { return }
        guard !segments.isEmpty else { return }
        // UV_EAGAIN while libuv still queues earlier bytes, so output stays in order; any other
        // error is left to `uv_write`, which reports it the usual way.
        let written = segments.withUnsafeBufferPointer { buffers in
            Int(uv_try_write(stream, buffers.baseAddress, UInt32(buffers.count)))
        }
        guard written > 0 else {
            writeSegments()
            return
        }
        if written == segmentBytes {
            segments.removeAll(keepingCapacity: true)
            segmentOwners.removeAll(keepingCapacity: true)
            segmentBytes = 0
            outputConfirmed(byteCount: written, status: 0)
            return
        }
        dropWrittenSegments(written)
        pendingBytes -= written
        writeSegments()
    }

    /// Removes the first `byteCount` bytes, fewer than `segmentBytes`, from the queued segments
    /// (each segment has exactly one owner, at the same index).
    private func dropWrittenSegments(_ byteCount: Int) {
        var rest = byteCount
        var whole = 0
        while rest >= segments[whole].len {
            rest -= segments[whole].len
            whole += 1
        }
        segments.removeFirst(whole)
        segmentOwners.removeFirst(whole)
        segments[0].base += rest
        segments[0].len -= rest
        segmentBytes -= byteCount
    }

    /// Writes everything queued as one `uv_write`.
    private func writeSegments() {
        guard !segments.isEmpty else { return }
        let request = spareRequests.popLast() ?? WriteRequest()
        request.connection = self
        request.byteCount = segmentBytes
        swap(&request.owners, &segmentOwners)
        request.request.pointee.data = Unmanaged.passRetained(request).toOpaque()
        let status = segments.withUnsafeBufferPointer { buffers in
            uv_write(request.request, stream, buffers.baseAddress, UInt32(buffers.count)) { request, status in
                let write = Unmanaged<WriteRequest>.fromOpaque(request!.pointee.data).takeRetainedValue()
                // A completed write can resume a paused session's input: work of this turn.
                write.connection!.loop.io.noteAwake()
                write.connection!.writeCompleted(write, status: status)
            }
        }
        segments.removeAll(keepingCapacity: true)
        segmentBytes = 0
        if status < 0 {
            Unmanaged.passUnretained(request).release()
            writeCompleted(request, status: status)
        }
    }

    private func writeCompleted(_ request: WriteRequest, status: Int32) {
        request.owners.removeAll(keepingCapacity: true)
        request.connection = nil
        if spareRequests.count < 4 && state == .open { spareRequests.append(request) }
        outputConfirmed(byteCount: request.byteCount, status: status)
    }

    /// `byteCount` bytes reached the kernel (or failed to, with `status` < 0).
    private func outputConfirmed(byteCount: Int, status: Int32) {
        pendingBytes -= byteCount
        if pendingBytes == 0, chunk != nil, isKnownUniquelyReferenced(&chunk!) {
            // Idle: give the chunk back to the loop rather than pin one per connection.
            loop.io.recycleChunk(chunk!)
            chunk = nil
        }
        if status < 0 {
            if status != UV_ECANCELED.rawValue { closeNow() }
        } else if state == .draining {
            continueDrain()
        }
        if let waiter = unsentWaiter, state == .open || state == .draining, !hasUnsentBytes(over: waiter.threshold) {
            unsentWaiter = nil
            waiter.action()
        }
    }

    // MARK: Closing

    /// Runs `hook` once when the connection closes (at once if it has). Any thread; the hook
    /// runs on the loop thread.
    public func onClose(_ hook: @escaping @Sendable () -> Void) {
        let added = hooks.withLock { hooks -> Bool in
            guard hooks != nil else { return false }
            hooks!.append(hook)
            return true
        }
        if !added { hook() }
    }

    /// Closes now, dropping output not yet written. Any thread.
    public func close() {
        if loop.isOnLoopThread {
            closeNow()
        } else {
            loop.execute { [self] in closeNow() }
        }
    }

    /// Closes gracefully: refuses further writes and input lines, writes what is pending,
    /// sends a FIN and waits for the peer's, then closes; closes anyway after `timeout`.
    /// Any thread.
    public func closeAfterFlush(timeout: Duration) {
        guard loop.isOnLoopThread else {
            loop.execute { [self] in closeAfterFlush(timeout: timeout) }
            return
        }
        guard state == .open else { return }
        state = .draining
        drainTimer = loop.after(delay: timeout) { [self] in closeNow() }
        if !inputEnded && !isReading { startReading() }
        continueDrain()
    }

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
    private func continueDrain() {
        guard state == .draining, pendingBytes == 0 else { return }
        if let filter, !filterFinished, filter.isEstablished {
            // The goodbye goes out before the FIN; its write's completion comes back here.
            filterFinished = true
            filter.finish()
            if filter.pendingOutputCount > 0 {
                flush()
                return
            }
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
    private func closeNow() {
        guard state == .open || state == .draining else { return }
        state = .closing
        drainTimer?.dispose()
        drainTimer = nil
        handshakeTimer?.dispose()
        handshakeTimer = nil
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
        segments.removeAll()
        segmentOwners.removeAll()
        spareRequests.removeAll()
        chunk = nil
        pendingBytes = 0
        unsentWaiter = nil
        filter = nil
        framer.pointee.reset()
        loop.handles.unregister(self)
        let toRun = hooks.withLock { hooks -> [@Sendable () -> Void] in
            defer { hooks = nil }
            return hooks ?? []
        }
        for hook in toRun { hook() }
        let delegate = self.delegate
        self.delegate = nil
        delegate?.connectionDidClose(self)
    }
}
