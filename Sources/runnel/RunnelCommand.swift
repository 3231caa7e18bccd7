import ArgumentParser
import Glibc
import RunnelVersion

/// `runnel`, the command-line client of `runneld`: publish, subscribe and manage subjects.
///
/// Exit statuses: 0 success; 1 a run-time failure (cannot connect, a server error reply, a
/// subscription ended by an error); 2 a usage error; 130/143 a subscription stopped by
/// SIGINT/SIGTERM. Runs on the main thread only, blocking.
struct RunnelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runnel",
        abstract: "Command-line client for runneld: publish, subscribe, manage subjects.",
        discussion: """
            The server is --server HOST:PORT (or runnel://HOST:PORT, or runnels://HOST:PORT for TLS), \
            else $RUNNEL_SERVER, else \(ServerAddress.defaultText). \
            With --token (or $RUNNEL_TOKEN) runnel authenticates first.
            """,
        version: "runnel \(RunnelVersion.text)",
        subcommands: [
            PublishCommand.self, SubscribeCommand.self, MapCommand.self, CreateCommand.self, CompleteCommand.self,
            ErrorCommand.self, DeleteCommand.self, ListCommand.self, StatsCommand.self, PingCommand.self,
            WatchersCommand.self,
        ])

    /// Parses, runs, and maps every outcome onto the documented exit statuses: usage errors to 2
    /// (ArgumentParser would use 64), `CLIFailure` to its own status; `--help` exits 0.
    static func main() {
        // A server that closes while we write must give EPIPE, not kill the process.
        signal(SIGPIPE, SIG_IGN)
        var command: ParsableCommand
        do {
            command = try parseAsRoot(GlobalOptions.reordered(Array(CommandLine.arguments.dropFirst())))
        } catch {
            guard exitCode(for: error) != .success else { exit(withError: error) }
            StandardError.write(fullMessage(for: error) + "\n")
            Glibc.exit(CLIFailure.usageStatus)
        }
        do {
            try command.run()
        } catch let failure as CLIFailure {
            StandardError.write("runnel: \(failure.message)\n")
            Glibc.exit(failure.status)
        } catch let exitCode as ExitCode {
            Glibc.exit(exitCode.rawValue)
        } catch {
            guard exitCode(for: error) != .success else { exit(withError: error) }
            StandardError.write(fullMessage(for: error) + "\n")
            Glibc.exit(CLIFailure.usageStatus)
        }
    }
}
