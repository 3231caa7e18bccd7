import CLibUV
import RunnelBytes

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writing: the writers' API over the connection's `WriteQueue`, and the flush that hands the
/// queue to the socket once per loop turn (or at once past `eagerFlushBytes`).
extension TCPConnection {
    /// Queues a copy of `bytes`. Returns false (dropping them) once the connection is no
    /// longer open. Loop thread.
    @discardableResult
    public func write(copying bytes: UnsafeRawBufferPointer) -> Bool {
        loop.assertOnLoopThread()
        guard state == .open else { return false }
        queue.append(bytes, from: loop.io.chunks)
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

    /// Queues copies of the four pieces, as `write(copying:_:_:_:)`, unless
    /// `hasUnsentBytes(over: limit)`: then returns false and queues nothing. A delivery's check
    /// and copy in one call, for a writer that reaches the connection through `ByteStream`.
    /// Loop thread.
    @inline(__always)
    public func write(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer, unlessUnsentOver limit: Int
    ) -> Bool {
        guard !hasUnsentBytes(over: limit) else { return false }
        _ = write(copying: first, second, third, fourth, lineEnd: false)
        return true
    }

    @inline(__always)
    private func write(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer, lineEnd: Bool
    ) -> Bool {
        loop.assertOnLoopThread()
        guard state == .open else { return false }
        if queue.appendInOpenChunk(first, second, third, fourth, lineEnd: lineEnd) {
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
        let pool = loop.io.chunks
        queue.append(first, from: pool)
        queue.append(second, from: pool)
        queue.append(third, from: pool)
        queue.append(fourth, from: pool)
        if lineEnd {
            var newline: UInt8 = 10
            withUnsafeBytes(of: &newline) { queue.append($0, from: pool) }
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
        if buffer.count <= ByteBuffer.copyThreshold {
            queue.append(buffer.bytes, from: loop.io.chunks)
        } else {
            queue.append(reference: buffer.bytes, owner: buffer.storage)
        }
        requestFlush()
        return true
    }

    /// Queued bytes past which a connection is flushed at once rather than in the check phase,
    /// so a large burst handled in one loop turn reaches the kernel as it is produced.
    static let eagerFlushBytes = 64 * 1024

    /// Bytes written but not yet handed to the kernel: queued here or waiting in libuv's write
    /// queue. What a slow consumer piles up; the daemon's `max_pending_bytes` is checked
    /// against it. Loop thread.
    public var unsentBytes: Int {
        // The handle's documented read-only field, read in place: this runs once per delivery,
        // and `uv_stream_get_write_queue_size` is a call into libuv to return it.
        queue.queuedBytes + Int(handle.pointee.write_queue_size)
    }

    /// Bytes the kernel has taken since the connection opened: the writes that ended and what
    /// libuv has written of those in flight. It grows while the peer reads, so a caller can
    /// tell a consumer that is draining from one that has stopped. Loop thread.
    public var sentBytes: UInt64 {
        queue.finishedBytes &+ UInt64(max(0, queue.inFlightBytes &- Int(handle.pointee.write_queue_size)))
    }

    /// Bytes the peer has acknowledged since the connection opened: `sentBytes` less what the
    /// kernel still holds of them (`SIOCOUTQ`: unsent or unacknowledged). Unlike `sentBytes` it
    /// grows while a slow peer reads from a full send buffer, which the kernel refills (waking
    /// the writer) only once a third of it is free: for a buffer of megabytes and a reader of a
    /// few kilobytes a second, minutes in which `sentBytes` stands still. One system call;
    /// `sentBytes` when the socket cannot say. Loop thread.
    public var acknowledgedBytes: UInt64 {
        let sent = sentBytes
        var descriptor: uv_os_fd_t = -1
        guard uv_fileno(runnel_tcp_as_handle(handle), &descriptor) == 0 else { return sent }
        var held: Int32 = 0
        guard withUnsafeMutablePointer(to: &held, { ioctl(descriptor, UInt(TIOCOUTQ), $0) }) == 0 else { return sent }
        return sent &- min(sent, UInt64(max(0, held)))
    }

    /// Whether `unsentBytes` is over `limit`. The same answer, cheaper: `pendingBytes` is never
    /// less than `unsentBytes` (it also counts what libuv has handed to the kernel from a write
    /// still in progress) and sits in the state every write touches, while `unsentBytes` follows
    /// three pointers (the open chunk's counters, the handle) that miss the cache when one
    /// value fans out to many connections. Loop thread.
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
        guard isReadable else { return }
        if !hasUnsentBytes(over: threshold) {
            unsentWaiter = nil
            action()
        } else {
            unsentWaiter = (threshold, action)
        }
    }

    @inline(__always)
    private func requestFlush() {
        if queue.queuedBytes >= Self.eagerFlushBytes {
            queue.seal()
            if let filterStage, !filterStage.prepareOutput(of: self) { return }
            writeQueued()
            return
        }
        queueForFlush()
    }

    /// Asks for a flush in this turn's check phase.
    @inline(__always)
    func queueForFlush() {
        guard !isQueuedForFlush else { return }
        isQueuedForFlush = true
        loop.io.needsFlush(self)
    }

    /// Writes everything queued (the loop's check phase). When libuv holds no earlier output
    /// for the socket, the bytes go straight to the kernel with `uv_try_write`: no request, no
    /// callback in the next turn, and no `epoll_ctl` (libuv re-arms the poll after every
    /// completed `uv_write`, one system call per connection per turn). What the kernel does not
    /// take goes out with one `uv_write`. Write completion is reported here, at the top of the
    /// check phase, never inside a caller's `write`.
    func flush() {
        isQueuedForFlush = false
        guard isReadable else { return }
        queue.seal()
        if let filterStage, !filterStage.prepareOutput(of: self) { return }
        // UV_EAGAIN while libuv still queues earlier bytes, so output stays in order; any other
        // error is left to `uv_write`, which reports it the usual way.
        guard
            let written = queue.withSegments({ buffers in
                Int(uv_try_write(stream, buffers.baseAddress, UInt32(buffers.count)))
            })
        else { return }
        guard written > 0 else {
            writeQueued()
            return
        }
        let wroteAll = written == queue.segmentBytes
        queue.dropWritten(written, pool: loop.io.chunks)
        if wroteAll {
            outputConfirmed(status: 0)
        } else {
            writeQueued()
        }
    }

    /// Writes every queued segment as one `uv_write`.
    func writeQueued() {
        var status: Int32 = 0
        var started: WriteRequest?
        queue.startWrite { request, buffers in
            request.connection = self
            request.request.pointee.data = Unmanaged.passRetained(request).toOpaque()
            started = request
            status = uv_write(request.request, stream, buffers.baseAddress, UInt32(buffers.count)) { request, status in
                let write = Unmanaged<WriteRequest>.fromOpaque(request!.pointee.data).takeRetainedValue()
                // A completed write can resume a paused session's input: work of this turn.
                write.connection!.loop.io.noteAwake()
                write.connection!.writeCompleted(write, status: status)
            }
        }
        if status < 0, let started {
            Unmanaged.passUnretained(started).release()
            writeCompleted(started, status: status)
        }
    }

    private func writeCompleted(_ request: WriteRequest, status: Int32) {
        request.connection = nil
        queue.completeWrite(request, keepsSpare: state == .open, pool: loop.io.chunks)
        outputConfirmed(status: status)
    }

    /// Bytes reached the kernel (or failed to, with `status` < 0).
    private func outputConfirmed(status: Int32) {
        queue.recycleIdleChunk(to: loop.io.chunks)
        if status < 0 {
            if status != UV_ECANCELED.rawValue { closeNow() }
        } else if state == .draining {
            continueDrain()
        }
        if let waiter = unsentWaiter, isReadable, !hasUnsentBytes(over: waiter.threshold) {
            unsentWaiter = nil
            waiter.action()
        }
    }
}
