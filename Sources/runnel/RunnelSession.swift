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
    /// Whether the session sends `auth` first (a token was given), for what `unauthorized` means.
    let authenticates: Bool
    private var nextRef = 1
    /// Whether a line has come from the server yet (the first tells a wrong port).
    private var heard = false

    init(connection: LineSocket, replyTimeoutMilliseconds: Int32, authenticates: Bool) {
        self.connection = connection
        self.replyTimeoutMilliseconds = replyTimeoutMilliseconds
        self.authenticates = authenticates
    }

    /// Sends `request` with a new `ref` and returns its successful reply. A failure reply
    /// throws `server error <code>: <message>`.
    func roundTrip(
        _ request: RequestLine, timeoutMilliseconds: Int32? = nil,
        onOtherLine: (ServerLine) throws(CLIFailure) -> Void = { _ in }
    ) throws(CLIFailure) -> ServerLine {
        let ref = try send(request)
        let reply = try awaitReply(ref: ref, timeoutMilliseconds: timeoutMilliseconds, onOtherLine: onOtherLine)
        guard case .reply(ok: true) = reply.kind else { throw failure(reply) }
        return reply
    }

    /// Sends `request` with a new `ref` and returns that `ref`, for `awaitReply`.
    func send(_ request: RequestLine) throws(CLIFailure) -> String {
        let ref = nextRef
        nextRef += 1
        var request = request
        request.integer("ref", ref)
        do throws(RunnelError) { try connection.send(request.finished()) } catch { throw CLIFailure(error) }
        return String(ref)
    }

    /// A failure reply or a `closing` line as the CLI reports it: the server's code and message,
    /// and for `unauthorized` what to do about it.
    func failure(_ line: ServerLine) -> CLIFailure {
        let code = line.code ?? "unknown"
        var message = line.message ?? ""
        if code == "unauthorized" {
            message +=
                authenticates
                ? " (the token of --token or $RUNNEL_TOKEN was refused, or has lost this right)"
                : " (this server wants a token: give it with --token TOKEN or $RUNNEL_TOKEN)"
        }
        return .serverError(code: code, message: message)
    }

    /// Reads lines until the reply with `ref`, passing every other line to `onOtherLine`.
    func awaitReply(
        ref: String, timeoutMilliseconds: Int32? = nil, onOtherLine: (ServerLine) throws(CLIFailure) -> Void
    ) throws(CLIFailure) -> ServerLine {
        let deadline = MonotonicClock.milliseconds + Int64(timeoutMilliseconds ?? replyTimeoutMilliseconds)
        while true {
            while let bytes = connection.bufferedLine() {
                defer { heard = true }
                guard let line = ServerLine(bytes) else {
                    if bytes.isEmpty { continue }
                    if !heard, let wrongPort = RunnelError.wrongPort(firstLine: bytes, address: connection.address) {
                        throw CLIFailure(wrongPort)
                    }
                    throw CLIFailure("unexpected line from the server: \(String(decoding: bytes, as: UTF8.self))")
                }
                if case .reply = line.kind, line.ref == ref { return line }
                try onOtherLine(line)
            }
            let remaining = deadline - MonotonicClock.milliseconds
            guard remaining > 0 else {
                throw CLIFailure("no reply from \(connection.address) within the timeout", code: "timeout")
            }
            do throws(RunnelError) {
                _ = try connection.receive(timeoutMilliseconds: Int32(min(remaining, 1000)))
            } catch {
                throw CLIFailure(error)
            }
        }
    }
}
