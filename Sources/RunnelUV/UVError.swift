import CLibUV

/// A libuv call that failed: the operation and libuv's (negative) error code.
public struct UVError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The libuv error code (negative errno-style, e.g. `UV_EADDRINUSE`).
    public let code: Int32
    /// What was being done (`"uv_tcp_bind"`, say).
    public let operation: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// libuv's name for the code (`"EADDRINUSE"`).
    public var name: String { String(cString: uv_err_name(code)) }

    public var description: String { "\(operation): \(String(cString: uv_strerror(code))) (\(name))" }

    /// Throws when `status` is a libuv error.
    static func check(_ status: Int32, _ operation: @autoclosure () -> String) throws {
        if status < 0 { throw UVError(code: status, operation: operation()) }
    }
}
