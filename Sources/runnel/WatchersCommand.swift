import ArgumentParser
import RunnelClient
import RunnelJSON

/// `runnel watchers SUBJECT`: how many subscriptions SUBJECT has, then each change, one number
/// a line, from `$sys.occupancy.SUBJECT` (docs/protocol.md, "The server's names and
/// occupancy"): for a script that runs a feed only while it is watched.
struct WatchersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watchers",
        abstract: "Print how many subscriptions a subject has now, then each change.",
        discussion: """
            One number a line: the count now, then at once when it goes from 0 to 1 or back, \
            and at most every 100 ms otherwise (patterns that match the subject count too). \
            When the connection is lost, runnel connects again and prints the count then. \
            Exit status: 130/143 after SIGINT/SIGTERM.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "A subject name (not a pattern).") var subject: String

    func validate() throws {
        // The server checks the name; a pattern or one of its own names is refused here, where
        // it would be read as another occupancy subject's.
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        guard !subject.hasPrefix("$"), !tokens.contains(where: { $0 == "*" || $0 == ">" }) else {
            throw ValidationError("'\(subject)' is not a subject name (no patterns, no '$' names)")
        }
    }

    func run() throws {
        SignalFlag.install()
        let output = FileDescriptorWriter(fd: 1)
        var session = try connection.connect()
        while true {
            var request = RequestLine(op: "sub")
            request.string("subject", "$sys.occupancy." + subject)
            request.json(
                "ops", .array([.object(JSONObject([("op", .string("map")), ("expr", .string(".subscribers"))]))]))
            let reply = try session.roundTrip(request)
            guard let sid = reply.sid else { throw CLIFailure("the reply to sub carries no sid: \(reply.text)") }
            let printer = SubscriptionPrinter(
                session: session, sid: sid, showSubject: false, showPositions: false, events: false, output: output)
            guard case .lost(let reason) = try printer.run() else { return }
            session.connection.shutdown()
            StandardError.write("runnel: \(reason); connecting again\n")
            session = try connection.reconnect()
        }
    }
}
