/// A failure with the protocol's `code` (`bad_expr`, `unauthorized`, `slow_consumer`...), the
/// server's `message`, and `stage` when a stage of a subscription caused it; or one of the
/// client's own codes: `connection_lost` (the connection ended, or could not be made, before the
/// answer came), `timeout` (no answer to `auth` or `ping` within the timeout at connect, or a
/// call past its deadline), `wrong_port` (the address is runneld's HTTP port, not its line
/// port) and `closed` (the client was closed).
///
/// Thread rules: an immutable value, `Sendable`. Lifetime rule: none (a value).
public struct RunnelError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let message: String
    /// The 0-based index of the stage that caused it, or nil.
    public let stage: Int?

    public init(code: String, message: String = "", stage: Int? = nil) {
        self.code = code
        self.message = message
        self.stage = stage
    }

    /// `connection_lost` with what happened.
    static func connectionLost(_ message: String) -> RunnelError {
        RunnelError(code: "connection_lost", message: message)
    }

    static let closed = RunnelError(code: "closed", message: "the client was closed")

    /// `wrong_port` when `line`, the first a server sent, is an HTTP response: the address is
    /// runneld's HTTP port (which answers a JSON line with `400 Bad Request`). nil otherwise.
    package static func wrongPort(firstLine line: some Collection<UInt8>, address: String) -> RunnelError? {
        guard line.starts(with: "HTTP/1.".utf8) else { return nil }
        return RunnelError(
            code: "wrong_port",
            message: "\(address) speaks HTTP: it is runneld's HTTP port (WebSocket clients use ws://\(address)/ws); "
                + "the line protocol (runnel://, runnels://) is on runneld's listen port, "
                + "\(ServerEndpoint.defaultPort) by default")
    }

    /// `CODE (stage N): MESSAGE`, as the other clients print theirs.
    public var description: String {
        var text = code
        if let stage { text += " (stage \(stage))" }
        if !message.isEmpty { text += ": \(message)" }
        return text
    }
}
