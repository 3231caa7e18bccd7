import RunnelClient

/// Requests and replies over one connection: each request gets a fresh numeric `ref`, and
/// `roundTrip` reads lines until the reply carrying that `ref` arrives.
///
/// Lines that are not that reply (events of a subscription, failure replies of earlier
/// reference-less `pub`s) go to `onOtherLine`, in order. The CLI's blocking use of the client
/// library's `LineSocket`: one command, one connection, no reconnects (`RunnelClient` is the
/// asynchronous client with them). One thread only.
final class RunnelSession {
    let connection: LineSocket
    let replyTimeoutMilliseconds: Int32
    private var nextRef = 1

    init(connection: LineSocket, replyTimeoutMilliseconds: Int32) {
        self.connection = connection
        self.replyTimeoutMilliseconds = replyTimeoutMilliseconds
    }

    /// Sends `request` with a new `ref` and returns its successful reply. A failure reply
    /// throws `server error <code>: <message>`.
    func roundTrip(
        _ request: RequestLine, timeoutMilliseconds: Int32? = nil,
        onOtherLine: (ServerLine) throws(CLIFailure) -> Void = { _ in }
    ) throws(CLIFailure) -> ServerLine {
        let ref = nextRef
        nextRef += 1
        var request = request
        request.integer("ref", ref)
        do throws(RunnelError) { try connection.send(request.finished()) } catch { throw CLIFailure(error) }
        let reply = try awaitReply(ref: String(ref), timeoutMilliseconds: timeoutMilliseconds, onOtherLine: onOtherLine)
        guard case .reply(ok: true) = reply.kind else {
            throw .serverError(code: reply.code ?? "unknown", message: reply.message ?? "")
        }
        return reply
    }

    /// Reads lines until the reply with `ref`, passing every other line to `onOtherLine`.
    func awaitReply(
        ref: String, timeoutMilliseconds: Int32? = nil, onOtherLine: (ServerLine) throws(CLIFailure) -> Void
    ) throws(CLIFailure) -> ServerLine {
        let deadline = MonotonicClock.milliseconds + Int64(timeoutMilliseconds ?? replyTimeoutMilliseconds)
        while true {
            while let bytes = connection.bufferedLine() {
                guard let line = ServerLine(bytes) else {
                    if bytes.isEmpty { continue }
                    throw CLIFailure("unexpected line from the server: \(String(decoding: bytes, as: UTF8.self))")
                }
                if case .reply = line.kind, line.ref == ref { return line }
                try onOtherLine(line)
            }
            let remaining = deadline - MonotonicClock.milliseconds
            guard remaining > 0 else { throw CLIFailure("no reply from \(connection.address) within the timeout") }
            do throws(RunnelError) {
                _ = try connection.receive(timeoutMilliseconds: Int32(min(remaining, 1000)))
            } catch {
                throw CLIFailure(error)
            }
        }
    }
}
