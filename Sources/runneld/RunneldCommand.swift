import ArgumentParser
import RunnelDaemon
import RunnelServer
import RunnelVersion

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `runneld`'s command line: where the configuration comes from and which keys flags override.
///
/// Everything that can be wrong with a configuration (a bad file, key or flag value, an unknown
/// flag) is reported on stderr in one message naming the key or option, with exit status 2,
/// before anything is started. Parsing and validation live in `ServerConfig` (RunnelServer) so
/// they are tested there; this type only maps options onto it.
struct RunneldCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runneld",
        abstract: "The Runnel server: reactive publish/subscribe over newline-delimited JSON.",
        discussion: """
            Without --config, runneld uses its built-in defaults (the protocol on 127.0.0.1:7455, HTTP on 127.0.0.1:7456). \
            Packages install the documented configuration as \(ServerConfig.packagedPath) and run \
            `runneld --config \(ServerConfig.packagedPath)`. --listen, --http-listen, --tls-listen, --https-listen, \
            --loops and --log-level override the file (the TLS listeners take their certificate from it). \
            Exit status 2 means the configuration or the command line is invalid.
            """,
        version: "runneld \(RunnelVersion.text)")

    /// The exit status for an invalid configuration or command line.
    static let configurationErrorStatus: Int32 = 2

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Read the configuration from FILE (TOML). Default: built-in defaults; packages use \(ServerConfig.packagedPath).",
            valueName: "FILE"))
    var config: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Listen on HOST:PORT (numeric host; IPv6 as [::1]:7455; port 0 picks one), overriding the file.",
            valueName: "HOST:PORT"))
    var listen: String?

    @Option(
        name: .customLong("http-listen"),
        help: ArgumentHelp(
            "Serve HTTP on HOST:PORT (\"\" turns it off), overriding the file. Default 127.0.0.1:7456.",
            valueName: "HOST:PORT"))
    var httpListen: String?

    @Option(
        name: .customLong("tls-listen"),
        help: ArgumentHelp(
            "Serve the protocol over TLS on HOST:PORT (\"\" turns it off), overriding the file; needs tls_cert_file and tls_key_file. Default off.",
            valueName: "HOST:PORT"))
    var tlsListen: String?

    @Option(
        name: .customLong("https-listen"),
        help: ArgumentHelp(
            "Serve HTTPS on HOST:PORT (\"\" turns it off), overriding the file; needs tls_cert_file and tls_key_file. Default off.",
            valueName: "HOST:PORT"))
    var httpsListen: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve connections on N event loops (0: one per CPU this process may run on; 1: a single loop), overriding the file.",
            valueName: "N"))
    var loops: String?

    @Option(
        name: .customLong("log-level"),
        help: ArgumentHelp(
            "Least severe level logged: trace, debug, info, notice, warning, error or critical. Overrides the file.",
            valueName: "LEVEL"))
    var logLevel: String?

    @Flag(
        name: .customLong("check-config"),
        help: "Validate the configuration, print the effective settings and exit: 0 when valid, 2 when not.")
    var checkConfig = false

    mutating func run() throws {
        let resolved: ServerConfig
        do {
            resolved = try ServerConfig.resolve(
                configPath: config, listen: listen, httpListen: httpListen, tlsListen: tlsListen,
                httpsListen: httpsListen, loops: loops, logLevel: logLevel)
        } catch {
            Self.writeToStderr("runneld: \(error)\n")
            throw ExitCode(Self.configurationErrorStatus)
        }
        if checkConfig {
            if resolved.servesTLS {
                do {
                    _ = try resolved.makeTLSContext()
                } catch {
                    Self.writeToStderr("runneld: \(config.map { "config \($0)" } ?? "config"): \(error)\n")
                    throw ExitCode(Self.configurationErrorStatus)
                }
            }
            print("runneld: configuration is valid (\(config.map { "config \($0)" } ?? "built-in defaults"))")
            resolved.summaryLines.forEach { print("  \($0)") }
            return
        }
        let (path, listen, httpListen, tlsListen, httpsListen, loops, logLevel) = (
            config, listen, httpListen, tlsListen, httpsListen, loops, logLevel
        )
        let status = RunneldMain.run(config: resolved) {
            try ServerConfig.resolve(
                configPath: path, listen: listen, httpListen: httpListen, tlsListen: tlsListen,
                httpsListen: httpsListen, loops: loops, logLevel: logLevel)
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Parses the arguments and runs, turning every command-line error into status 2 (not
    /// ArgumentParser's usual 64), as configuration errors are. `--help` still exits 0.
    static func main() {
        var command: ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            guard exitCode(for: error) != .success else { exit(withError: error) }
            writeToStderr(fullMessage(for: error) + "\n")
            exit(withError: ExitCode(configurationErrorStatus))
        }
        do {
            try command.run()
        } catch {
            exit(withError: error)
        }
    }

    private static func writeToStderr(_ text: String) {
        StderrLogHandler.writeToStderr(text)
    }
}
