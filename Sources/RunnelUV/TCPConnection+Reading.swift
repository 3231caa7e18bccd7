import CLibUV

/// Reading: the socket's input to the filter or the delegate, at most `readBudgetPerTurn` bytes
/// a loop turn, and the end of the peer's input.
extension TCPConnection {
    /// Starts delivering input to `delegate` (loop thread).
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
                let connection = Unmanaged<TCPConnection>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
                let io = connection.loop.io
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

    /// Stops delivering input until `startReading()` (loop thread).
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
    func chargeRead(_ count: Int) {
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

    /// Hands what was read to the filter, if any, else straight to the delegate: one branch
    /// per read.
    @inline(__always)
    private func consume(_ bytes: UnsafeRawBufferPointer) {
        if let filterStage {
            filterStage.receive(bytes, on: self)
        } else {
            deliver(bytes)
        }
    }

    /// Hands `bytes` (read, or the filter's application bytes) to the delegate while the
    /// connection is open; with no delegate, or once draining or closing, they are dropped.
    @inline(__always)
    func deliver(_ bytes: UnsafeRawBufferPointer) {
        guard state == .open, let delegate else { return }
        delegate.connection(self, didRead: bytes)
    }

    func readEnded(_ status: Int32) {
        isReading = false
        inputEnded = true
        if status == UV_EOF.rawValue {
            uv_read_stop(stream)
            delegate?.connectionDidEndInput(self)
            if state == .open {
                if !closePostponed {
                    closeAfterFlush(timeout: configuration.lingerAfterEndOfInput)
                }
            } else {
                continueDrain()
            }
        } else {
            closeNow()
        }
    }
}
