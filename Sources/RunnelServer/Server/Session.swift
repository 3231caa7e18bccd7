import Logging
import Runnel
import RunnelUV

/// One client connection's protocol state: its authentication, its subscriptions by sid, and
/// the writing of its replies and events.
///
/// Loop thread only: libuv calls it from the loop, and every subject a session subscribes to
/// is sent to from the loop. A session ends when its connection closes (either side); it then
/// disposes every subscription it holds, at once, so their chains, timers and inner
/// subscriptions are released.
final class Session: @unchecked Sendable {
    let id: UInt64
    /// The server owns its sessions and outlives them; unowned(unsafe) avoids a refcount check
    /// on every access on the hot path.
    unowned(unsafe) let server: Server
    /// The server's counters, held directly: updating them through `server` retains and
    /// releases the server around every update, twice per delivery.
    let stats: ServerStats
    let connection: TCPConnection
    var authenticated: Bool
    var subscriptions: [String: SessionSubscription] = [:]
    private var nextSid: UInt64 = 1
    /// The subject of this connection's last `pub` (see `publishTarget`).
    var lastPublishTarget: SubjectEntry?
    /// Set once the session stops delivering: closed, or closing as a slow consumer.
    private(set) var isClosing = false
    /// Requests read while the connection's unsent output was over `max_pending_bytes`, kept
    /// until it falls; see `holdInput`.
    private var held = HeldInput()

    init(id: UInt64, server: Server, connection: TCPConnection) {
        self.id = id
        self.server = server
        self.stats = server.stats
        self.connection = connection
        self.authenticated = server.config.authTokens.isEmpty
    }

    // MARK: Input

    /// Handles one request line (without its newline), or holds it while replies pile up.
    func handleLine(_ line: UnsafeRawBufferPointer) {
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

    /// A line over `max_line_bytes` was discarded as it arrived.
    func handleLongLine(byteCount: Int) {
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
                .lineTooLong,
                "line of \(byteCount) bytes exceeds max_line_bytes (\(connection.configuration.maxLineLength))"),
            ref: nil)
    }

    // MARK: Input backpressure

    /// A client that sends requests and does not read their replies would make the server
    /// queue output without end (a pipelined `list` costs a few bytes to send and can cost
    /// megabytes to answer), and `max_pending_bytes` is only checked for events. So once the
    /// unsent output is over it, the session stops reading the connection: the lines still in
    /// that read are held (at most one read buffer and one line), and the rest waits in the
    /// kernel, which pushes back on the client. When the output falls back to the limit, the
    /// held lines are handled, in order, pausing again whenever it is over, and reading resumes.
    private func holdInput() {
        guard !held.isWaiting else { return }
        held.isWaiting = true
        connection.stopReading()
        connection.whenUnsentBytes(fallTo: server.config.maxPendingBytes) { [weak self] in self?.resumeInput() }
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
        if !isClosing { connection.startReading() }
    }

    /// Whether the connection's unsent output is over `max_pending_bytes`: requests are held
    /// (`holdInput`) and events are a slow consumer's (`deliverNext`) while it is.
    @inline(__always)
    private var isOverPendingLimit: Bool { connection.hasUnsentBytes(over: server.config.maxPendingBytes) }

    private func isBlank(_ line: UnsafeRawBufferPointer) -> Bool {
        for byte in line where byte != 0x20 && byte != 0x09 && byte != 0x0D { return false }
        return true
    }

    // MARK: Subscriptions

    /// A sid not in use on this connection.
    func freshSid() -> String {
        while true {
            let sid = "s\(nextSid)"
            nextSid += 1
            if subscriptions[sid] == nil { return sid }
        }
    }

    /// Forgets `subscription` (finished, unsubscribed or closed) and fixes the counts.
    func forget(_ subscription: SessionSubscription) {
        guard !subscription.isFinished else { return }
        subscription.isFinished = true
        if subscriptions[subscription.sid] === subscription { subscriptions[subscription.sid] = nil }
        subscription.entry?.namedSubscriptions -= 1
        stats.subscriptions -= 1
    }

    /// Disposes every subscription: the connection is gone or going.
    func disposeAll() {
        let all = subscriptions.values
        for subscription in all {
            forget(subscription)
            subscription.disposable?.dispose()
        }
        subscriptions.removeAll()
    }

    /// The client sent its last byte: nothing more is delivered, every subscription goes now.
    func inputDidEnd() {
        isClosing = true
        disposeAll()
    }

    /// The connection closed, from either side.
    func connectionDidClose() {
        isClosing = true
        disposeAll()
        server.sessionDidClose(self)
    }

    // MARK: Delivery

    private static let lineEnd: StaticString = "}\n"

    func deliverNext(_ message: Message, to subscription: SessionSubscription) {
        guard !isClosing, !subscription.isFinished else { return }
        if isOverPendingLimit {
            switch server.config.slowConsumer {
            case .disconnect:
                closeAsSlowConsumer()
                return
            case .drop:
                subscription.dropped &+= 1
                stats.dropped &+= 1
                return
            }
        }
        if subscription.dropped > 0 { writeDropped(subscription) }
        let prefix = subscription.nextPrefix
        // The common line: a small published value, its bytes borrowed (`message` holds the
        // payload until this returns), copied whole with the prefix and suffix.
        if !subscription.isPattern, let value = message.value.publishedBytes,
            value.count <= TCPConnection.copyThreshold
        {
            writeNextLine(prefix, value)
            return
        }
        let value = message.value.raw.buffer
        if !subscription.isPattern && value.count <= TCPConnection.copyThreshold {
            writeNextLine(prefix, value.bytes)
            return
        }
        write(prefix)
        if subscription.isPattern {
            write(message.label.json)
            write(",\"value\":")
        }
        write(value)
        write("}\n")
        stats.delivered &+= 1
    }

    /// Copies `prefix`, a small value and the closing `}` into the output in one go.
    @inline(__always)
    private func writeNextLine(_ prefix: ByteBuffer, _ value: UnsafeRawBufferPointer) {
        stats.bytesOut &+= UInt64(prefix.count + value.count + 2)
        Self.lineEnd.withUTF8Buffer { end in
            _ = connection.write(copying: prefix.bytes, value, UnsafeRawBufferPointer(end))
        }
        stats.delivered &+= 1
    }

    /// Writes a subscription's terminal event and forgets it.
    func deliverTerminal(_ error: (any Error)?, to subscription: SessionSubscription) {
        guard !subscription.isFinished else { return }
        defer { forget(subscription) }
        guard !isClosing else { return }
        if subscription.dropped > 0 { writeDropped(subscription) }
        var line = JSONWriter()
        if let error {
            let failure = ProtocolError(wrapping: error)
            line.append("{\"ev\":\"error\",\"sid\":")
            line.append(raw: subscription.sidJSON)
            line.key("code")
            line.writeString(failure.code.rawValue)
            line.key("message")
            line.writeString(failure.message)
            if let stage = failure.stage {
                line.key("stage")
                line.writeInteger(stage)
            }
            line.append("}\n")
        } else {
            line.append("{\"ev\":\"completed\",\"sid\":")
            line.append(raw: subscription.sidJSON)
            line.append("}\n")
        }
        write(line)
    }

    private func writeDropped(_ subscription: SessionSubscription) {
        var line = JSONWriter()
        line.append("{\"ev\":\"dropped\",\"sid\":")
        line.append(raw: subscription.sidJSON)
        line.key("count")
        line.writeInteger(subscription.dropped)
        line.append("}\n")
        subscription.dropped = 0
        write(line)
    }

    /// The slow-consumer policy `disconnect`: one last line, then close.
    private func closeAsSlowConsumer() {
        guard !isClosing else { return }
        isClosing = true
        server.logger.notice(
            "closing slow consumer",
            metadata: [
                "connection": "\(id)", "peer": "\(connection.remoteAddress)", "unsent": "\(connection.unsentBytes)",
            ])
        disposeAll()
        write("{\"ev\":\"closing\",\"code\":\"slow_consumer\"}\n")
        connection.closeAfterFlush(timeout: .seconds(2))
    }

    // MARK: Replies

    func writeReply(error: any Error, ref: RawJSON?) {
        let failure = ProtocolError(wrapping: error)
        var line = JSONWriter()
        line.append("{\"ok\":false")
        if let ref {
            line.key("ref")
            line.write(ref)
        }
        line.key("code")
        line.writeString(failure.code.rawValue)
        line.key("message")
        line.writeString(failure.message)
        if let stage = failure.stage {
            line.key("stage")
            line.writeInteger(stage)
        }
        line.append("}\n")
        write(line)
    }

    /// Writes `{"ok":true[,"ref":R]` + `fields` + `}`.
    func writeOK(ref: RawJSON?, _ fields: (inout JSONWriter) -> Void = { _ in }) {
        var line = JSONWriter()
        line.append("{\"ok\":true")
        if let ref {
            line.key("ref")
            line.write(ref)
        }
        fields(&line)
        line.append("}\n")
        write(line)
    }

    // MARK: Output

    @inline(__always)
    private func write(_ literal: StaticString) {
        stats.bytesOut &+= UInt64(literal.utf8CodeUnitCount)
        literal.withUTF8Buffer { _ = connection.write(copying: UnsafeRawBufferPointer($0)) }
    }

    @inline(__always)
    private func write(_ buffer: ByteBuffer) {
        stats.bytesOut &+= UInt64(buffer.count)
        connection.write(buffer)
    }

    private func write(_ line: JSONWriter) {
        stats.bytesOut &+= UInt64(line.bytes.count)
        line.bytes.withUnsafeBytes { _ = connection.write(copying: $0) }
    }
}

/// The input a session holds while its connection's output is over `max_pending_bytes`: the
/// held lines back to back, each followed by its `\n` (so it costs what it took to send), and
/// where in them a line over `max_line_bytes` still has to be answered (such a line took more
/// than `max_line_bytes` to send, so there are few). Loop thread only.
struct HeldInput {
    enum Item {
        /// A request line, as a range of `bytes`.
        case line(Range<Int>)
        /// A line over `max_line_bytes`, discarded as it arrived, still to be answered.
        case longLine(Int)
    }

    private(set) var bytes: [UInt8] = []
    /// Long lines: the offset in `bytes` they came at, and their length.
    private var longLines: [(offset: Int, byteCount: Int)] = []
    /// The offset in `bytes` and the index in `longLines` of the next item.
    private var cursor = 0
    private var nextLongLine = 0
    /// Reading is stopped and a wake-up is registered with the connection.
    var isWaiting = false

    /// Whether input is being held: new lines must queue behind what is held.
    var isActive: Bool { isWaiting || cursor < bytes.count || nextLongLine < longLines.count }

    /// The next item to handle.
    var first: Item? {
        if nextLongLine < longLines.count && longLines[nextLongLine].offset == cursor {
            return .longLine(longLines[nextLongLine].byteCount)
        }
        guard cursor < bytes.count else { return nil }
        let end = bytes[cursor...].firstIndex(of: 10)!
        return .line(cursor..<end)
    }

    /// Moves past `item`, which `first` returned.
    mutating func remove(_ item: Item) {
        switch item {
        case .line(let range): cursor = range.upperBound + 1
        case .longLine: nextLongLine += 1
        }
    }

    mutating func append(line: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: line)
        bytes.append(10)
    }

    mutating func append(longLine byteCount: Int) { longLines.append((bytes.count, byteCount)) }

    /// Forgets everything held, giving the memory back.
    mutating func reset() {
        bytes = []
        longLines = []
        cursor = 0
        nextLongLine = 0
    }
}

extension ProtocolError {
    /// `error` as the protocol reports it: a `ProtocolError` as is, the library's timeout as
    /// `eval`/"timeout", anything else as `eval` with its description.
    init(wrapping error: any Error) {
        switch error {
        case let failure as ProtocolError: self = failure
        case RunnelError.timedOut: self.init(.eval, "timeout")
        default: self.init(.eval, "\(error)")
        }
    }
}
