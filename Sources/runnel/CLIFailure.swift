import RunnelClient

/// A failure that ends `runnel` with a message on stderr and a chosen exit status.
///
/// Every subcommand reports its problems by throwing one of these; `RunnelCommand.main()`
/// prints `runnel: <message>` and exits with `status`.
struct CLIFailure: Error, CustomStringConvertible {
    /// Status for failures at run time (connection, server error replies).
    static let runtimeStatus: Int32 = 1
    /// Status for a command line that cannot be used.
    static let usageStatus: Int32 = 2

    let message: String
    let status: Int32
    /// The server's or the client library's error code, when the failure has one.
    let code: String?

    init(_ message: String, status: Int32 = CLIFailure.runtimeStatus, code: String? = nil) {
        self.message = message
        self.status = status
        self.code = code
    }

    /// An `{"ok":false,...}` reply from the server.
    static func serverError(code: String, message: String) -> CLIFailure {
        CLIFailure("server error \(code): \(message)", code: code)
    }

    /// A bad command-line value found after ArgumentParser accepted the syntax.
    static func usage(_ message: String) -> CLIFailure {
        CLIFailure(message, status: usageStatus)
    }

    var description: String { message }
}

extension CLIFailure {
    /// A connection failure of the client library (`LineSocket`), in its own words.
    init(_ error: RunnelError) { self.init(error.message, code: error.code) }

    /// Whether a new connection may not fail the same way: the server could not be reached, or
    /// is full for now.
    var isTransient: Bool { ["connection_lost", "timeout", "limit"].contains(code) }
}
