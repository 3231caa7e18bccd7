import RunnelProtocol
import RunnelUV

/// A session's output held back while a reply waits for the disk (durable subjects under
/// `fsync = always`): the reply's place in the output is reserved, every line written after it
/// is kept in order behind it, and once the reply is filled in (its line and its value, a
/// `SessionReply`), everything up to the next unfilled reply goes out, each line with the
/// value it was written with. So replies stay in request order, a `sub` reply stays ahead of its
/// events, and no event follows an `unsub` reply.
///
/// It wraps the session's real transport and forwards everything but the writes; held lines
/// count as unsent output, so `max_pending_bytes` bounds them. Thread rules: loop thread only.
/// Lifetime rule: the session holds it while it holds anything (`Session.cork`) and each
/// reserved reply's disk report until it is filled; it holds the real transport.
final class CorkedTransport: SessionTransport {
    let inner: any SessionTransport
    /// Lines in output order, each with the value it says when it was written as one (a
    /// reply, an event, the `closing` line); nil marks a reserved reply not filled in yet.
    private var held: [(line: [UInt8], value: HeldValue?)?] = []
    private var heldBytes = 0
    /// Lines written to `inner` so far: reservation `slot` is at `held[slot - flushed]`.
    private var flushed = 0
    /// A `whenUnsentBytes` waiting for held lines to go out.
    private var waiter: (threshold: Int, action: () -> Void)?

    /// What a held line says as a value, handed on with it.
    private enum HeldValue {
        case closing(ProtocolError)
        case reply(SessionReply)
        case event(SessionEvent, sid: String)
    }

    init(wrapping inner: any SessionTransport) {
        self.inner = inner
    }

    /// Whether nothing is held any more: the session can write to `inner` directly again.
    var isDrained: Bool { held.isEmpty }

    /// Reserves the next reply's place; `fill` it with the reply later.
    func reserve() -> Int {
        held.append(nil)
        return flushed + held.count - 1
    }

    /// Fills the reserved place `slot` with `reply` and its line, and writes every line that
    /// is now at the front.
    func fill(_ slot: Int, with line: [UInt8], _ reply: SessionReply) {
        held[slot - flushed] = (line, .reply(reply))
        heldBytes += line.count
        var written = 0
        while written < held.count, let next = held[written] {
            next.line.withUnsafeBytes { bytes in
                switch next.value {
                case .closing(let reason): inner.writeClosing(bytes, reason: reason)
                case .reply(let reply): inner.writeReply(bytes, reply)
                case .event(let event, let sid): inner.writeEvent(bytes, event, sid: sid)
                case nil: inner.writeLine(bytes)
                }
            }
            heldBytes -= next.line.count
            written += 1
        }
        held.removeFirst(written)
        flushed += written
        if let waiter, heldBytes <= waiter.threshold {
            self.waiter = nil
            inner.whenUnsentBytes(fallTo: waiter.threshold - heldBytes, waiter.action)
        }
    }

    private func hold(_ line: [UInt8], _ value: HeldValue? = nil) {
        held.append((line, value))
        heldBytes += line.count
    }

    // MARK: SessionTransport

    func start(receiver: any RequestReceiver) { inner.start(receiver: receiver) }
    func writeLine(_ line: UnsafeRawBufferPointer) { hold(Array(line)) }
    func writeClosing(_ line: UnsafeRawBufferPointer, reason: ProtocolError) { hold(Array(line), .closing(reason)) }
    func writeReply(_ line: UnsafeRawBufferPointer, _ reply: SessionReply) { hold(Array(line), .reply(reply)) }
    func writeEvent(_ line: UnsafeRawBufferPointer, _ event: SessionEvent, sid: String) {
        hold(Array(line), .event(event, sid: sid))
    }

    func writeNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        unlessUnsentOver limit: Int
    ) -> Bool {
        guard !hasUnsentBytes(over: limit) else { return false }
        var line: [UInt8] = []
        line.reserveCapacity(head.count + value.count + tail.count)
        line.append(contentsOf: head)
        line.append(contentsOf: value)
        line.append(contentsOf: tail)
        hold(line)
        return true
    }

    func hasUnsentBytes(over limit: Int) -> Bool { heldBytes > limit || inner.hasUnsentBytes(over: limit - heldBytes) }
    var unsentBytes: Int { heldBytes + inner.unsentBytes }
    var sentBytes: UInt64 { inner.sentBytes }
    func pauseInput() { inner.pauseInput() }
    func resumeInput() { inner.resumeInput() }

    func whenUnsentBytes(fallTo threshold: Int, _ action: @escaping () -> Void) {
        if heldBytes <= threshold {
            waiter = nil
            inner.whenUnsentBytes(fallTo: threshold - heldBytes, action)
        } else {
            waiter = (threshold, action)
        }
    }

    func closeAfterFlush(timeout: Duration) { inner.closeAfterFlush(timeout: timeout) }
    var maxRequestBytes: Int { inner.maxRequestBytes }
    var peerDescription: String { inner.peerDescription }
    var transportName: String { inner.transportName }
}
