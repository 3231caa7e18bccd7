import RunnelProtocol
import RunnelServer

/// The HTTP statuses the front door answers with, and which status reports which of the
/// protocol's error codes (docs/protocol.md, "The HTTP front door"). Immutable values.
public struct HTTPStatus: Equatable, Sendable {
    public let code: Int
    public let reason: StaticString

    static let switchingProtocols = HTTPStatus(code: 101, reason: "Switching Protocols")
    static let ok = HTTPStatus(code: 200, reason: "OK")
    static let noContent = HTTPStatus(code: 204, reason: "No Content")
    static let movedPermanently = HTTPStatus(code: 301, reason: "Moved Permanently")
    static let notModified = HTTPStatus(code: 304, reason: "Not Modified")
    static let badRequest = HTTPStatus(code: 400, reason: "Bad Request")
    static let unauthorized = HTTPStatus(code: 401, reason: "Unauthorized")
    static let forbidden = HTTPStatus(code: 403, reason: "Forbidden")
    static let notFound = HTTPStatus(code: 404, reason: "Not Found")
    static let methodNotAllowed = HTTPStatus(code: 405, reason: "Method Not Allowed")
    static let conflict = HTTPStatus(code: 409, reason: "Conflict")
    static let contentTooLarge = HTTPStatus(code: 413, reason: "Content Too Large")
    static let upgradeRequired = HTTPStatus(code: 426, reason: "Upgrade Required")
    static let headerFieldsTooLarge = HTTPStatus(code: 431, reason: "Request Header Fields Too Large")
    static let internalServerError = HTTPStatus(code: 500, reason: "Internal Server Error")
    static let serviceUnavailable = HTTPStatus(code: 503, reason: "Service Unavailable")

    public static func == (lhs: HTTPStatus, rhs: HTTPStatus) -> Bool { lhs.code == rhs.code }

    /// The status that reports `code` when nothing more specific applies (a connection
    /// refused at `max_connections` is `503` with `limit`; a body over `max_body_bytes`, `413`).
    init(reporting code: ErrorCode) {
        switch code {
        case .badJSON, .badRequest, .badOperator, .badExpr, .unknownOp, .duplicateSid, .unknownSid: self = .badRequest
        case .unauthorized: self = .unauthorized
        case .forbiddenOrigin: self = .forbidden
        case .unknownSubject, .notFound: self = .notFound
        case .methodNotAllowed: self = .methodNotAllowed
        case .kindMismatch, .terminated: self = .conflict
        case .lineTooLong, .limit: self = .contentTooLarge
        case .storage, .unavailable: self = .serviceUnavailable
        case .eval, .slowConsumer, .subjectError: self = .internalServerError
        }
    }

    private init(code: Int, reason: StaticString) {
        self.code = code
        self.reason = reason
    }
}

/// A request answered with an error: the status and the protocol error its body carries.
public struct HTTPFailure: Error, Equatable {
    public let status: HTTPStatus
    public let error: ProtocolError

    init(_ error: ProtocolError, status: HTTPStatus? = nil) {
        self.error = error
        self.status = status ?? HTTPStatus(reporting: error.code)
    }

    init(_ code: ErrorCode, _ message: String, status: HTTPStatus? = nil) {
        self.init(ProtocolError(code, message), status: status)
    }
}
