/// A close frame's status code (RFC 6455, 7.4), and which ones a peer may send. Immutable.
public struct WebSocketCloseCode: Equatable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    public static let normal = WebSocketCloseCode(1000)
    /// The server is stopping.
    public static let goingAway = WebSocketCloseCode(1001)
    public static let protocolError = WebSocketCloseCode(1002)
    /// A binary message: the protocol is text.
    public static let unsupportedData = WebSocketCloseCode(1003)
    /// A text message that is not UTF-8.
    public static let invalidPayload = WebSocketCloseCode(1007)
    /// The server's policy ends the connection: a slow consumer, a limit.
    public static let policyViolation = WebSocketCloseCode(1008)
    /// A message over `max_line_bytes`.
    public static let messageTooBig = WebSocketCloseCode(1009)

    /// Whether a peer may send this code in a close frame: the codes RFC 6455 defines for
    /// that (1004 to 1006 and 1015 are reserved, never sent), and 3000 to 4999, which are
    /// registered or private. The same set as the Autobahn test suite's.
    public var isSendable: Bool {
        switch rawValue {
        case 1000...1003, 1007...1011, 3000...4999: return true
        default: return false
        }
    }

    public var description: String { String(rawValue) }
}
