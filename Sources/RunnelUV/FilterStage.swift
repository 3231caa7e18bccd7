import CLibUV
import Runnel
import RunnelBytes

/// A connection's `ConnectionFilter` (TLS) and what plumbing it takes: reads go through the
/// filter before they reach the delegate, each flush's queued output goes through it before
/// the socket, and the handshake has a deadline. Above it, the delegate and the writers see only
/// application bytes.
///
/// Until the handshake finishes, queued output waits (the filter's own output, the handshake,
/// goes out alone); a handshake not finished within the filter's timeout, or a filter failure,
/// closes the connection; a graceful close sends the filter's goodbye (close_notify) before the
/// FIN. The connection calls it at most once per read and once per flush, never per write.
///
/// Thread rules: the connection's loop thread only. Lifetime rule: owned by one connection from
/// `TCPConnection.attach(filter:)` until the connection closes; its handshake timer holds the
/// connection until it fires or the connection closes.
final class FilterStage {
    let filter: any ConnectionFilter
    /// Closes the connection if the handshake has not finished in time.
    private var handshakeTimer: Disposable?
    /// The goodbye has been queued (graceful close).
    private var hasFinished = false

    init(filter: any ConnectionFilter, on connection: TCPConnection) {
        self.filter = filter
        handshakeTimer = connection.loop.after(delay: filter.handshakeTimeout) {
            if connection.filterStage?.filter.isEstablished == false { connection.closeNow() }
        }
    }

    /// The connection is closing: the deadline no longer matters.
    func cancelHandshakeTimer() {
        handshakeTimer?.dispose()
        handshakeTimer = nil
    }

    /// Takes bytes read from the socket: the filter decrypts into the loop's read buffer (which
    /// the ciphertext has left once the filter took it) and the application bytes go to the
    /// connection's input; what the filter has for the peer (handshake, alerts) is flushed.
    @inline(never)
    func receive(_ bytes: UnsafeRawBufferPointer, on connection: TCPConnection) {
        let wasEstablished = filter.isEstablished
        let io = connection.loop.io
        let scratch = UnsafeMutableRawBufferPointer(start: io.readBuffer, count: io.readBufferSize)
        let outcome = filter.receive(bytes, scratch: scratch) { plaintext in
            connection.deliver(plaintext)
            return connection.isReadable
        }
        if !wasEstablished && filter.isEstablished { cancelHandshakeTimer() }
        switch outcome {
        case .open:
            // Handshake messages to answer, or output that waited for the handshake.
            if filter.pendingOutputCount > 0
                || (filter.isEstablished && !wasEstablished && connection.queue.pendingBytes > 0)
            {
                connection.queueForFlush()
            }
        case .ended:
            connection.readEnded(UV_EOF.rawValue)
        case .failed:
            sendLastWordsAndClose(connection)
        }
    }

    /// A failed filter's last words (a TLS alert) are offered to the kernel once, without
    /// waiting, then the connection closes.
    func sendLastWordsAndClose(_ connection: TCPConnection) {
        if connection.isReadable, filter.pendingOutputCount > 0, connection.handle.pointee.write_queue_size == 0 {
            let io = connection.loop.io
            let scratch = UnsafeMutableRawBufferPointer(start: io.readBuffer, count: io.readBufferSize)
            let count = filter.takeOutput(into: scratch)
            var buffer = uv_buf_t(base: scratch.baseAddress!.assumingMemoryBound(to: CChar.self), len: count)
            _ = uv_try_write(connection.stream, &buffer, 1)
        }
        connection.closeNow()
    }

    /// Passes the connection's queued output through the filter, at flush time. Once the
    /// handshake is done, the queued application bytes are sealed and replaced by the filter's
    /// output, and the caller writes the queue as usual (returns true). Before, the application
    /// bytes stay queued, the filter's own output (the handshake) goes out with a write of its
    /// own, and the caller writes nothing more (returns false).
    @inline(never)
    func prepareOutput(of connection: TCPConnection) -> Bool {
        let pool = connection.loop.io.chunks
        guard filter.isEstablished else {
            guard filter.pendingOutputCount > 0 else { return false }
            let held = connection.queue.setSegmentsAside()
            connection.queue.append(from: pool) { filter.takeOutput(into: $0) }
            connection.writeQueued()
            connection.queue.putBack(held)
            return false
        }
        let sealed = connection.queue.withSegments { segments in
            segments.allSatisfy { filter.seal(UnsafeRawBufferPointer(start: $0.base, count: $0.len)) }
        }
        if sealed == false {
            sendLastWordsAndClose(connection)
            return false
        }
        if sealed != nil { connection.queue.removeSegments(pool: pool) }
        connection.queue.append(from: pool) { filter.takeOutput(into: $0) }
        return true
    }

    /// A graceful close's last step before the FIN: queues the goodbye once, when the
    /// handshake was done; true when there is one to flush first.
    func finish() -> Bool {
        guard !hasFinished, filter.isEstablished else { return false }
        hasFinished = true
        filter.finish()
        return filter.pendingOutputCount > 0
    }
}
