/// A failure with the protocol's `code` (`bad_expr`, `unauthorized`, `slow_consumer`...), the
/// server's `message`, and `stage` when a stage of a subscription caused it; or one of the
/// client's own codes: `connection_lost` (the connection ended, or could not be made, before the
/// answer came), `timeout` (no answer to `auth` or `ping` within the timeout at connect) and
/// `closed` (the client was closed).
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

    /// `CODE (stage N): MESSAGE`, as the other clients print theirs.
    public var description: String {
        var text = code
        if let stage { text += " (stage \(stage))" }
        if !message.isEmpty { text += ": \(message)" }
        return text
    }
}
