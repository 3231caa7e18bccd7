import RunnelProtocol
import RunnelUV

/// Requests in: each request a transport hands over is handled in order, or held while the
/// client does not read its replies, or while its publishing is paused by a lagging subscriber.
extension Session {
    /// Handles one request, or holds it while replies pile up.
    func transportDidReceive(request line: UnsafeRawBufferPointer) {
        stats.counts.bytesIn &+= UInt64(line.count + 1)
        guard !isClosing else { return }
        if isBlank(line) { return }
        if held.isActive || isOverInputLimit {
            held.append(line: line)
            holdInput()
            return
        }
        process(line)
        if publisher.isPaused { holdInput() }
    }

    private func process(_ line: UnsafeRawBufferPointer) {
        defer { noteRequestForLogin() }
        let request: Request
        do {
            request = try Request(parsing: line, maxDepth: settings.config.maxDepth)
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

    /// A `sub` a transport made as a value on its client's behalf (an SSE stream's, its
    /// session's only request): counted, checked and answered as its line would be, by the
    /// rules a `sub` line goes through (`subscribe`), its reply a value (`SessionReply`).
    func transportDidReceive(subscription request: SubscribeRequest, lineByteCount: Int, lineProblem: ProtocolError?) {
        stats.counts.bytesIn &+= UInt64(lineByteCount + 1)
        guard !isClosing else { return }
        defer { noteRequestForLogin() }
        do throws(ProtocolError) {
            if let lineProblem { throw lineProblem }
            context.scheduler.assertOnLoopThread()
            guard grant != nil else { throw Self.authenticateFirst }
            try subscribe(request)
        } catch {
            writeReply(error: error, ref: lineProblem == nil ? request.ref : nil)
        }
    }

    /// A request over `max_line_bytes` was discarded as it arrived.
    func transportDidDiscardLongRequest(byteCount: Int) {
        stats.counts.bytesIn &+= UInt64(byteCount)
        guard !isClosing else { return }
        if held.isActive || isOverInputLimit {
            held.append(longLine: byteCount)
            holdInput()
            return
        }
        reportLongLine(byteCount: byteCount)
    }

    func answer(toFirstLine line: UnsafeRawBufferPointer, on connection: any ByteStream) -> Bool {
        context.owner.answer(toFirstLine: line, on: connection)
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
    /// megabytes to answer), and the limits are only checked for events. So once the unsent
    /// output is over the soft limit, the session stops taking input: the requests already
    /// handed over are held (at most one read buffer and one line), and the rest waits in the
    /// kernel, which pushes back on the client. The same holds while a value this connection
    /// published has a lagging subscriber that paused it (`publisher.isPaused`). When
    /// both are over, the held requests are handled, in order, pausing again whenever either
    /// comes back, and input resumes.
    private func holdInput() {
        guard !held.isWaiting else { return }
        held.isWaiting = true
        transport.pauseInput()
        if isOverInputLimit {
            awaitOutputDrain()
        } else {
            publisher.whenResumed { [weak self] in self?.resumeInput() }
        }
    }

    /// Handles the held requests once what held them is over (the output fell: `outputDrained`;
    /// the publisher resumed: `holdInput`'s wake-up); nothing when nothing is held.
    func resumeInput() {
        guard held.isWaiting else { return }
        held.isWaiting = false
        while !isClosing, let next = held.first {
            if isOverInputLimit || publisher.isPaused {
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
            // A `sub` that waits for this node to catch up: the rest waits behind it.
            if held.isWaiting { return }
        }
        held.reset()
        guard !isClosing else { return }
        if publisher.isPaused {
            holdInput()
        } else {
            transport.resumeInput()
        }
    }

    // MARK: A position another node gave

    /// How long a `sub` whose `from` is beyond what this node delivered waits for it to catch
    /// up with the cluster; then it is answered as it is (`resumed: false`: a gap, told).
    static let catchUpWait: Duration = .seconds(5)

    /// Holds the requests after one that waits (a `sub` catching up, a `list` or `stats` another
    /// loop answers: `replyWhenAnswered`), as backpressure holds them, in order.
    func holdInputWhileWaiting() {
        held.isWaiting = true
        transport.pauseInput()
    }

    /// The reply `replyWhenAnswered` waited for is in its place: the requests held behind it
    /// are handled, then input resumes (unless one of them waits in turn).
    func resumeAfterAnswer() {
        guard !isClosing else { return }
        held.isWaiting = true
        resumeInput()
    }

    /// The waiting `sub` runs again, this node caught up (or its wait over), then what came
    /// after it.
    func subscribeCaughtUp(_ request: SubscribeRequest) {
        runAgain(request) { () throws(ProtocolError) in try subscribe(request, caughtUp: true) }
    }

    /// Runs a `sub` that held the input while it waited (`holdInputWhileWaiting`) again
    /// (`body`), answering its error, then the requests held behind it, unless it waits once
    /// more.
    func runAgain(_ request: SubscribeRequest, _ body: () throws(ProtocolError) -> Void) {
        guard !isClosing else { return }
        held.isWaiting = false
        do throws(ProtocolError) {
            try body()
        } catch {
            writeReply(error: error, ref: request.ref)
        }
        guard !held.isWaiting else { return }
        resumeAfterAnswer()
    }

    /// The unsent output past which requests are held (`holdInput`): the soft limit; while
    /// requests wait for the subjects' owner on another loop (`awaitingOwner`; a forwarded
    /// `pub` weighs in the cork until answered), the crossing limit, so a publisher is read
    /// only that far ahead of the owner (`SessionSettings.crossingWindow`).
    var inputLimit: Int { awaitingOwner == 0 ? settings.softPendingLimit : settings.crossingLimit }

    /// Whether the unsent output is over `inputLimit`: requests are held while it is. (A
    /// request waiting for the owner has its reply's place in the cork.)
    @inline(__always)
    var isOverInputLimit: Bool {
        if let cork { return cork.hasUnsentBytes(over: inputLimit) }
        return transport.hasUnsentBytes(over: settings.softPendingLimit)
    }

    /// Whether the unsent output is over the soft limit: events go through the slow-consumer
    /// policy (`deliverOverSoftLimit`) while it is.
    @inline(__always)
    var isOverSoftLimit: Bool {
        if let cork { return cork.hasUnsentBytes(over: settings.softPendingLimit) }
        return transport.hasUnsentBytes(over: settings.softPendingLimit)
    }

    private func isBlank(_ line: UnsafeRawBufferPointer) -> Bool {
        for byte in line where byte != 0x20 && byte != 0x09 && byte != 0x0D { return false }
        return true
    }
}
