import RunnelJSON
import RunnelProtocol
@testable import RunnelServer

/// A transport in memory: requests are fed in by the test, server lines are kept as strings,
/// and the unsent output is whatever the test says. For running sessions without sockets.
///
/// Thread rules: the loop thread of the session's server, like every transport. Lifetime
/// rule: holds its receiver until `close()` has told it `transportDidClose()`.
final class MemoryTransport: SessionTransport {
    /// The lines written so far, oldest first.
    private(set) var lines: [String] = []
    /// Whether the session asked to stop receiving requests.
    private(set) var isInputPaused = false
    private(set) var isClosed = false
    /// Set once the session asked to close after flushing.
    private(set) var closeRequested = false
    /// What `hasUnsentBytes(over:)` and `unsentBytes` report; set it to play a slow consumer,
    /// and `drain()` to play one that caught up.
    var unsent = 0
    /// What `sentBytes` reports; raise it (and `acknowledged`) to play a slow consumer whose
    /// kernel takes more of its output.
    var sent: UInt64 = 0
    /// What `acknowledgedBytes` reports; raise it alone to play a slow consumer that reads
    /// from a full send buffer, which the kernel does not refill yet.
    var acknowledged: UInt64 = 0
    /// What each line written adds to `unsent`: a client that reads nothing meanwhile.
    var unsentPerLine = 0
    let maxRequestBytes: Int
    let peerDescription = "memory"
    let transportName = "memory"
    /// The session it carries, until it has closed.
    private(set) var receiver: (any RequestReceiver)?
    private var unsentWaiter: (threshold: Int, action: () -> Void)?

    init(maxRequestBytes: Int = 1 << 20) {
        self.maxRequestBytes = maxRequestBytes
    }

    func start(receiver: any RequestReceiver) { self.receiver = receiver }

    /// Hands `request` to the session as the client would send it (over `maxRequestBytes`,
    /// as a discarded long request).
    func receive(_ request: String) {
        guard !isClosed else { return }
        precondition(!isInputPaused, "the session paused its input")
        var request = request
        request.withUTF8 { bytes in
            if bytes.count > maxRequestBytes {
                receiver?.transportDidDiscardLongRequest(byteCount: bytes.count)
            } else {
                receiver?.transportDidReceive(request: UnsafeRawBufferPointer(bytes))
            }
        }
    }

    /// Hands `request` to the session as a line read before the session paused the input (a
    /// socket's read buffer holds several): the session must hold it.
    func receiveReadAhead(_ request: String) {
        var request = request
        request.withUTF8 { receiver?.transportDidReceive(request: UnsafeRawBufferPointer($0)) }
    }

    /// Takes the lines written so far.
    func takeLines() -> [String] {
        defer { lines.removeAll() }
        return lines
    }

    /// The client caught up: no output is unsent.
    func drain() {
        sent &+= UInt64(unsent)
        unsent = 0
        if let waiter = unsentWaiter {
            unsentWaiter = nil
            waiter.action()
        }
    }

    /// The client went away: end of input, then the close.
    func close() {
        guard !isClosed else { return }
        receiver?.transportDidEndInput()
        finishClosing()
    }

    private func finishClosing() {
        isClosed = true
        unsentWaiter = nil
        let receiver = self.receiver
        self.receiver = nil
        receiver?.transportDidClose()
    }

    // MARK: SessionTransport

    /// The replies written so far, oldest first (their lines are in `lines` too).
    private(set) var replies: [SessionReply] = []

    /// Keeps `output`'s line (made as the line protocols make it), and the reply or event it is.
    func write(_ output: SessionOutput) -> Int {
        guard !isClosed, !closeRequested else { return 0 }
        switch output {
        case .reply(let reply): replies.append(reply)
        case .event(let event, let sid, _): events.append((event, sid))
        case .closing: break
        }
        var line = ServerLineWriter.line(for: output)
        let bytes = line.finish()
        lines.append(String(decoding: bytes, as: UTF8.self))
        unsent += unsentPerLine
        return bytes.count + 1
    }

    /// Hands the session a `sub` as a value, as an SSE stream does.
    func receive(subscription request: SubscribeRequest, maxDepth: Int = JSONLimits.defaultMaxDepth) {
        let line = request.line()
        receiver?.transportDidReceive(
            subscription: request, lineByteCount: line.count,
            lineProblem: request.lineProblem(line, maxDepth: maxDepth))
    }

    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        guard unsent <= limit else { return false }
        if !isClosed && !closeRequested {
            lines.append(String(decoding: Array(head) + Array(value) + Array(tail), as: UTF8.self))
            unsent += unsentPerLine
        }
        return true
    }

    /// The events other than `next` written so far, oldest first (their lines are in `lines`
    /// too).
    private(set) var events: [(event: SessionEvent, sid: String)] = []

    /// The positions written beside `next` lines so far, as `EPOCH:SEQ`.
    private(set) var positions: [String] = []

    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        position: EventPosition, unlessUnsentOver limit: Int
    ) -> Bool {
        guard writeNext(head: head, value: value, tail: tail, unlessUnsentOver: limit) else { return false }
        positions.append(String(decoding: position.epochAndColon, as: UTF8.self) + String(position.seq))
        return true
    }

    func hasUnsentBytes(over limit: Int) -> Bool { unsent > limit }
    var unsentBytes: Int { unsent }
    var sentBytes: UInt64 { sent }
    var acknowledgedBytes: UInt64 { acknowledged }
    func pauseInput() { isInputPaused = true }
    func resumeInput() { isInputPaused = false }

    func whenUnsentBytes(fallTo threshold: Int, _ action: @escaping () -> Void) {
        if unsent <= threshold {
            unsentWaiter = nil
            action()
        } else {
            unsentWaiter = (threshold, action)
        }
    }

    /// Closes at once: nothing is queued in memory.
    func closeAfterFlush(timeout: Duration) {
        guard !closeRequested else { return }
        closeRequested = true
        finishClosing()
    }
}
