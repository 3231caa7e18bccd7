import ArgumentParser
import Glibc
import RunnelClient

/// The options every subcommand shares: which server, which token, how long to wait.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The server as HOST:PORT, runnel://HOST:PORT or runnels://HOST:PORT (TLS) "
                + "(default: $RUNNEL_SERVER, else \(ServerAddress.defaultText)).",
            valueName: "ADDRESS"))
    var server: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Authenticate with TOKEN first (default: $RUNNEL_TOKEN).", valueName: "TOKEN"))
    var token: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds to wait for connecting and for each reply.", valueName: "SECONDS"))
    var timeout: Double = 10

    @Flag(name: .long, help: "Connect with TLS (runneld's tls_listen), checking the server's certificate.")
    var tls = false

    @Option(
        name: .customLong("ca-file"),
        help: ArgumentHelp(
            "Trust the CA certificates in FILE (PEM) for --tls, instead of the system's.", valueName: "FILE"))
    var caFile: String?

    @Option(
        name: .customLong("server-name"),
        help: ArgumentHelp(
            "The name the server's certificate must be valid for with --tls (default: the host of --server).",
            valueName: "NAME"))
    var serverName: String?

    @Option(
        name: .customLong("cert-file"),
        help: ArgumentHelp(
            "Present the client certificate in FILE (PEM) with --tls, for a server with tls_ca_file.",
            valueName: "FILE"))
    var certFile: String?

    @Option(
        name: .customLong("key-file"),
        help: ArgumentHelp("The private key of --cert-file (PEM).", valueName: "FILE"))
    var keyFile: String?

    /// The flag, else the environment, else the default.
    func address() throws(CLIFailure) -> ServerAddress {
        let text = server ?? Self.environment(ServerAddress.environmentName) ?? ServerAddress.defaultText
        return try ServerAddress(parsing: text)
    }

    /// Whether to connect with TLS: `--tls`, or a `runnels://` address (one that does not parse
    /// is reported when connecting).
    private var usesTLS: Bool { tls || (try? address())?.secure == true }

    /// The token from the flag, else the environment; nil or empty means none.
    var effectiveToken: String? {
        let value = token ?? Self.environment("RUNNEL_TOKEN")
        return value?.isEmpty == false ? value : nil
    }

    /// The reply timeout in milliseconds, for `poll`.
    var timeoutMilliseconds: Int32 { Int32(max(1, min(timeout * 1000, 86_400_000))) }

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number") }
        if !usesTLS && (caFile != nil || serverName != nil || certFile != nil || keyFile != nil) {
            throw ValidationError("--ca-file, --server-name, --cert-file and --key-file need --tls (or runnels://)")
        }
        if (certFile == nil) != (keyFile == nil) {
            throw ValidationError("--cert-file and --key-file go together")
        }
    }

    /// Connects, authenticates when a token is set, and returns the ready session.
    func connect() throws(CLIFailure) -> RunnelSession {
        let address = try address()
        let connection: LineSocket
        do throws(RunnelError) {
            connection = try LineSocket(
                host: address.host, port: address.port, timeoutMilliseconds: timeoutMilliseconds, tls: tlsSettings)
        } catch {
            throw CLIFailure(error)
        }
        let token = effectiveToken
        let session = RunnelSession(
            connection: connection, replyTimeoutMilliseconds: timeoutMilliseconds, authenticates: token != nil)
        if let token {
            var auth = RequestLine(op: "auth")
            auth.string("token", token)
            _ = try session.roundTrip(auth)
        }
        return session
    }

    /// Connects again after a lost connection, waiting between attempts (0.1 s doubling to 5 s)
    /// while the server cannot be reached; a signal meanwhile exits as it would have during a
    /// subscription (`sub`, `watchers`).
    func reconnect() throws -> RunnelSession {
        var delay = 0.1
        while true {
            if let signal = SignalFlag.pending { throw ExitCode(128 + signal) }
            do throws(CLIFailure) {
                return try connect()
            } catch {
                guard error.isTransient else { throw error }
            }
            SignalFlag.sleep(seconds: delay)
            delay = min(delay * 2, 5)
        }
    }

    /// A subscription's connection was lost (`reason`): closes `session`, then gives up
    /// (`--no-reconnect`: the failure) or says so on stderr and connects again, to resume after
    /// `resumeAfter` (`sub`, `map`).
    func resume(
        after reason: String, closing session: RunnelSession, from resumeAfter: String?, noReconnect: Bool
    ) throws -> RunnelSession {
        session.connection.shutdown()
        if noReconnect { throw CLIFailure(reason) }
        let after = resumeAfter.map { "after \($0)" } ?? "afresh"
        StandardError.write("runnel: \(reason); connecting again to resume \(after)\n")
        return try reconnect()
    }

    /// The TLS settings of `--tls` (or `runnels://`) and its companions; nil without TLS.
    var tlsSettings: TLSSettings? {
        guard usesTLS else { return nil }
        return TLSSettings(caFile: caFile, serverName: serverName, certificateFile: certFile, keyFile: keyFile)
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}
