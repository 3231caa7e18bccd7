/// Requests in: each request a transport hands over is handled in order, or held while the
/// client does not read its replies.
extension Session {
    /// Handles one request, or holds it while replies pile up.
    func transportDidReceive(request line: UnsafeRawBufferPointer) {
        stats.bytesIn &+= UInt64(line.count + 1)
        guard !isClosing else { return }
        if isBlank(line) { return }
        if held.isActive || isOverPendingLimit {
            held.append(line: line)
            holdInput()
            return
        }
        process(line)
    }

    private func process(_ line: UnsafeRawBufferPointer) {
        defer { noteRequestForLogin() }
        let request: Request
        do {
            request = try Request(parsing: line, maxDepth: server.config.maxDepth)
        } catch {
            writeReply(error: error, ref: nil)
            return
        }
        do {
            try handle(request)
        } catch {
            writeReply(error: error, ref: request.ref)
        }
    }

    /// A request over `max_line_bytes` was discarded as it arrived.
    func transportDidDiscardLongRequest(byteCount: Int) {
        stats.bytesIn &+= UInt64(byteCount)
        guard !isClosing else { return }
        if held.isActive || isOverPendingLimit {
            held.append(longLine: byteCount)
            holdInput()
            return
        }
        reportLongLine(byteCount: byteCount)
    }

    private func reportLongLine(byteCount: Int) {
        writeReply(
            error: ProtocolError(
                .lineTooLong, "line of \(byteCount) bytes exceeds max_line_bytes (\(transport.maxRequestBytes))"),
            ref: nil)
    }

    // MARK: Backpressure

    /// A client that sends requests and does not read their replies would make the server
    /// queue output without end (a pipelined `list` costs a few bytes to send and can cost
    /// megabytes to answer), and `max_pending_bytes` is only checked for events. So once the
    /// unsent output is over it, the session stops taking input: the requests already handed
    /// over are held (at most one read buffer and one line), and the rest waits in the
    /// kernel, which pushes back on the client. When the output falls back to the limit, the
    /// held requests are handled, in order, pausing again whenever it is over, and input
    /// resumes.
    private func holdInput() {
        guard !held.isWaiting else { return }
        held.isWaiting = true
        transport.pauseInput()
        output.whenUnsentBytes(fallTo: server.config.maxPendingBytes) { [weak self] in self?.resumeInput() }
    }

    private func resumeInput() {
        held.isWaiting = false
        while !isClosing, let next = held.first {
            if isOverPendingLimit {
                holdInput()
                return
            }
            held.remove(next)
            switch next {
            case .line(let range):
                held.bytes.withUnsafeBytes { process(UnsafeRawBufferPointer(rebasing: $0[range])) }
            case .longLine(let byteCount):
                reportLongLine(byteCount: byteCount)
            }
        }
        held.reset()
        if !isClosing { transport.resumeInput() }
    }

    /// Whether the unsent output is over `max_pending_bytes`: requests are held (`holdInput`)
    /// and events are a slow consumer's (`deliverNext`) while it is.
    @inline(__always)
    var isOverPendingLimit: Bool {
        if let cork { return cork.hasUnsentBytes(over: server.config.maxPendingBytes) }
        return transport.hasUnsentBytes(over: server.config.maxPendingBytes)
    }

    private func isBlank(_ line: UnsafeRawBufferPointer) -> Bool {
        for byte in line where byte != 0x20 && byte != 0x09 && byte != 0x0D { return false }
        return true
    }
}
