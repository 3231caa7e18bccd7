import ArgumentParser
import Glibc

/// The options every subcommand shares: which server, which token, how long to wait.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The server as HOST:PORT (default: $RUNNEL_SERVER, else \(ServerAddress.defaultText)).",
            valueName: "HOST:PORT"))
    var server: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Authenticate with TOKEN first (default: $RUNNEL_TOKEN).", valueName: "TOKEN"))
    var token: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds to wait for connecting and for each reply.", valueName: "SECONDS"))
    var timeout: Double = 10

    /// The flag, else the environment, else the default.
    func address() throws(CLIFailure) -> ServerAddress {
        let text = server ?? Self.environment(ServerAddress.environmentName) ?? ServerAddress.defaultText
        return try ServerAddress(parsing: text)
    }

    /// The token from the flag, else the environment; nil or empty means none.
    var effectiveToken: String? {
        let value = token ?? Self.environment("RUNNEL_TOKEN")
        return value?.isEmpty == false ? value : nil
    }

    /// The reply timeout in milliseconds, for `poll`.
    var timeoutMilliseconds: Int32 { Int32(max(1, min(timeout * 1000, 86_400_000))) }

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number") }
    }

    /// Connects, authenticates when a token is set, and returns the ready session.
    func connect() throws(CLIFailure) -> RunnelSession {
        let session = RunnelSession(
            connection: try ServerConnection(address: try address(), timeoutMilliseconds: timeoutMilliseconds),
            replyTimeoutMilliseconds: timeoutMilliseconds)
        if let token = effectiveToken {
            var auth = RequestLine(op: "auth")
            auth.string("token", token)
            _ = try session.roundTrip(auth)
        }
        return session
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}
