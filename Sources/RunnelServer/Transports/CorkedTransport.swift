import RunnelProtocol
import RunnelUV

/// A session's output held back while a reply waits for the disk (durable subjects under
/// `fsync = always`): the reply's place in the output is reserved, every line written after it
/// is kept in order behind it, and once the reply is filled in (a `SessionReply`), everything
/// up to the next unfilled reply goes out, in order: outputs as the values they were written
/// as, `next` lines as the bytes they were. So replies stay in request order, a `sub` reply
/// stays ahead of its events, and no event follows an `unsub` reply. A reply filled in
/// `afterEventsBehindIt` goes after the events held right behind its place instead: a `pub` or
/// an ending another loop carried out at once sends its events there with its answer, just
/// before it, and so they come before the reply, as on the owner's loop (an event may go ahead
/// of a `pub`'s or a change's reply; not of a `sub`'s). Requests sent without waiting for
/// replies keep their replies' places: events behind a later place wait behind it.
///
/// It wraps the session's real transport and forwards everything but the writes; held output
/// counts as unsent (a value by the line it would be, `ServerLineWriter.line(for:)`), so
/// `max_pending_bytes` bounds it, and counts in `bytes_out` when it goes out (`fill`'s result).
/// Thread rules: loop thread only.
/// Lifetime rule: the session holds it while it holds anything (`Session.cork`) and each
/// reserved reply's disk report until it is filled; it holds the real transport.
final class CorkedTransport: SessionTransport {
    let inner: any SessionTransport
    /// What was written, in order, each with the bytes it holds, from `front` on (those before
    /// it went out and are dropped in bulk: a publisher with thousands of `pub`s at another
    /// loop fills one place at a time); a nil item marks a reserved reply not filled in yet,
    /// with what it weighs meanwhile.
    private var held: [(item: Held?, bytes: Int)] = []
    private var front = 0
    private var heldBytes = 0
    /// Lines written to `inner` so far: reservation `slot` is at `held[slot - flushed + front]`.
    private var flushed = 0
    /// A `whenUnsentBytes` waiting for held lines to go out.
    private var waiter: (threshold: Int, action: () -> Void)?

    /// One held write.
    private enum Held {
        case output(SessionOutput)
        /// The replies of one place that several requests share (a run of `pub`s).
        case outputs([SessionOutput])
        /// A `next` line, whole.
        case next([UInt8])
        /// A reserved place the answer left empty (a `pub` without a `ref` that succeeded).
        case nothing

        /// A `next` line, or another event (an ending).
        var isEvent: Bool {
            switch self {
            case .next, .output(.event): true
            case .output, .outputs, .nothing: false
            }
        }
    }

    init(wrapping inner: any SessionTransport) {
        self.inner = inner
    }

    /// Whether nothing is held any more: the session can write to `inner` directly again.
    var isDrained: Bool { front == held.count }

    /// Reserves the next reply's place; `fill` it with the reply later. Until then the place
    /// weighs `bytes` as unsent output (what a `pub` sent to another loop holds there).
    func reserve(weighing bytes: Int = 0) -> Int {
        held.append((nil, bytes))
        heldBytes += bytes
        return flushed + held.count - 1 - front
    }

    /// Whether the reserved place `slot` is the last thing held: a request that shares it
    /// (`weigh(_:more:)`) keeps its reply's place.
    func isLast(_ slot: Int) -> Bool { slot - flushed + front == held.count - 1 }

    /// The reserved place `slot` weighs `bytes` more.
    func weigh(_ slot: Int, more bytes: Int) {
        held[slot - flushed + front].bytes += bytes
        heldBytes += bytes
    }

    /// Fills the reserved place `slot` with `replies` (nothing when there are none), in order,
    /// after the events held right behind it when `afterEventsBehindIt`, and writes
    /// everything now at the front. Returns the bytes `inner` counted for the outputs it wrote
    /// (the `next` lines were counted as they were held).
    func fill(_ slot: Int, with replies: [SessionReply], afterEventsBehindIt: Bool = false) -> Int {
        let outputs = replies.map { SessionOutput.reply($0) }
        let bytes = outputs.reduce(0) { $0 + Self.weight(of: $1) }
        var index = slot - flushed + front
        if afterEventsBehindIt {
            var end = index + 1
            while end < held.count, held[end].item?.isEvent == true { end += 1 }
            if end > index + 1 {
                let place = held[index]
                held[index..<end - 1] = held[index + 1..<end]
                held[end - 1] = place
                index = end - 1
            }
        }
        heldBytes += bytes - held[index].bytes
        held[index] =
            switch outputs.count {
            case 0: (.nothing, 0)
            case 1: (.output(outputs[0]), bytes)
            default: (.outputs(outputs), bytes)
            }
        var written = front
        var counted = 0
        while written < held.count, let item = held[written].item {
            switch item {
            case .output(let output): counted += inner.write(output)
            case .outputs(let outputs): for output in outputs { counted += inner.write(output) }
            case .next(let line):
                _ = line.withUnsafeBytes { line in
                    inner.writeNext(head: line, value: Self.none, tail: Self.none, unlessUnsentOver: .max)
                }
            case .nothing: break
            }
            heldBytes -= held[written].bytes
            held[written] = (.nothing, 0)  // what it held is let go now
            written += 1
        }
        flushed += written - front
        front = written
        if front == held.count {
            held.removeAll(keepingCapacity: true)
            front = 0
        } else if front > 64 && front * 2 > held.count {
            held.removeFirst(front)
            front = 0
        }
        return counted
    }

    /// Hands a `whenUnsentBytes` waiting for held lines to `inner` once they are few enough:
    /// after a `fill`, once the session has let go of a cork that holds nothing (the waiter's
    /// action may write, which must not be held by a cork nothing will fill again).
    func handOverWaiter() {
        guard let waiter, heldBytes <= waiter.threshold else { return }
        self.waiter = nil
        inner.whenUnsentBytes(fallTo: waiter.threshold - heldBytes, waiter.action)
    }

    private static var none: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }

    /// What a held output weighs against the unsent-output limit: its line's length.
    private static func weight(of output: SessionOutput) -> Int {
        var line = ServerLineWriter.line(for: output)
        return line.finish().count
    }

    private func hold(_ item: Held, bytes: Int) {
        held.append((item, bytes))
        heldBytes += bytes
    }

    // MARK: SessionTransport

    func start(receiver: any RequestReceiver) { inner.start(receiver: receiver) }
    /// Holds `output`; it is counted when it goes out (`fill`).
    func write(_ output: SessionOutput) -> Int {
        hold(.output(output), bytes: Self.weight(of: output))
        return 0
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
        hold(.next(line), bytes: line.count)
        return true
    }

    func hasUnsentBytes(over limit: Int) -> Bool { heldBytes > limit || inner.hasUnsentBytes(over: limit - heldBytes) }
    var unsentBytes: Int { heldBytes + inner.unsentBytes }
    var sentBytes: UInt64 { inner.sentBytes }
    var acknowledgedBytes: UInt64 { inner.acknowledgedBytes }
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
