/// The protocol's error codes, as they appear on the wire in `"code"`.
public enum ErrorCode: String, Sendable, CaseIterable {
    case badJSON = "bad_json"
    case badRequest = "bad_request"
    case unknownOp = "unknown_op"
    case unknownSubject = "unknown_subject"
    case kindMismatch = "kind_mismatch"
    case terminated
    case badOperator = "bad_operator"
    case badExpr = "bad_expr"
    case eval
    case duplicateSid = "duplicate_sid"
    case unknownSid = "unknown_sid"
    case limit
    case unauthorized
    case lineTooLong = "line_too_long"
    case slowConsumer = "slow_consumer"
    case subjectError = "subject_error"
    /// An extension: durable subjects cannot be written now (a full disk, an I/O error).
    case storage
    /// A clustered node's link to NATS is down: what needs the cluster changed nothing.
    case unavailable
    /// HTTP only: no route has the request's path.
    case notFound = "not_found"
    /// HTTP only: the path's route does not answer the request's method.
    case methodNotAllowed = "method_not_allowed"
    /// HTTP only: a request from a web page of an origin the server does not allow.
    case forbiddenOrigin = "forbidden_origin"
}

/// A failure the server reports to a client: a reply `{"ok":false,...}` or a stream `error`
/// event. `stage` is the 0-based index of the stage that raised it, where one did.
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var stage: Int?

    public init(_ code: ErrorCode, _ message: String, stage: Int? = nil) {
        self.code = code
        self.message = message
        self.stage = stage
    }

    public var description: String {
        stage.map { "\(code.rawValue) at stage \($0): \(message)" } ?? "\(code.rawValue): \(message)"
    }
}
