import ArgumentParser
import RunnelClient
import RunnelJSON

/// `runnel map SUBJECT`: a map subject's keys as a table sorted by key, once the server says
/// they are all there (`synced`), then each change as a line (`MapTable`, `MapLine`).
struct MapCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "map",
        abstract: "Print a map subject's keys and values, sorted by key, then each change.",
        discussion: """
            Once the server has sent every key (synced), one line per key: the key, a tab, and \
            the value as the server sent it (compact JSON), sorted by key. Then one line per \
            change as it happens, in the same form: KEY<TAB>VALUE for a write, \
            KEY<TAB>(removed: deleted) or KEY<TAB>(removed: expired) for a removal. A key \
            holding a control character (a tab, a line break) or starting with a double quote \
            is printed as a JSON string. --once exits after the table. \
            When the connection is lost, runnel connects again and goes on after the last change \
            it printed; when the server cannot, runnel prints what changed meanwhile, a key gone \
            as KEY<TAB>(removed: missed). \
            Exit status: 0 after --once's table or when the subject completes, 1 when the subject \
            is not a map or the subscription fails, 130/143 after SIGINT/SIGTERM.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "A map subject's name (runnel create NAME --kind map makes one).") var subject: String
    @Flag(help: "Print the table and exit, without following the changes.") var once = false
    @Flag(help: "Exit (status 1) when the connection is lost, instead of connecting again and resuming.")
    var noReconnect = false
    @Flag(help: "When this reader lags, get each key's latest change, not every change (skips are said on stderr).")
    var conflate = false

    func validate() throws {
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        guard !tokens.contains(where: { $0 == "*" || $0 == ">" }) else {
            throw ValidationError("'\(subject)' is a pattern; runnel map reads one map subject")
        }
    }

    func run() throws {
        SignalFlag.install()
        let output = FileDescriptorWriter(fd: 1)
        var session = try connection.connect()
        try checkIsMap(on: session)
        let table = MapTable(output: output, endsAtSync: once)
        var resumeAfter: String?
        while true {
            let printer = try subscribe(on: session, after: resumeAfter, table: table, output: output)
            let ending = try printer.run()
            resumeAfter = printer.lastPosition ?? resumeAfter
            guard case .lost(let reason) = ending else { return }
            session = try connection.resume(
                after: reason, closing: session, from: resumeAfter, noReconnect: noReconnect)
        }
    }

    /// Refuses a subject that does not exist (a `sub` would create a plain one) or is of another
    /// kind, whose values carry no key.
    private func checkIsMap(on session: RunnelSession) throws(CLIFailure) {
        var request = RequestLine(op: "list")
        request.string("prefix", subject)
        let entries = try ListCommand.entries(of: session.roundTrip(request))
        guard let entry = entries.first(where: { $0["subject"] == .string(subject) }) else {
            throw CLIFailure("no subject \(subject) (runnel create \(subject) --kind map makes one)")
        }
        guard entry["kind"] == .string(SubjectKind.map.rawValue) else {
            let kind = ListCommand.cell(entry["kind"])
            throw CLIFailure("\(subject) is not a map but of kind \(kind) (runnel sub reads it)")
        }
    }

    /// Subscribes on `session`, after `position` when there is one, and returns the printer that
    /// hands the events to `table`.
    private func subscribe(
        on session: RunnelSession, after position: String?, table: MapTable, output: FileDescriptorWriter
    ) throws(CLIFailure) -> SubscriptionPrinter {
        var request = RequestLine(op: "sub")
        request.string("subject", subject)
        request.bool("positions", true)
        if let position { request.string("from", position) }
        if conflate { request.bool("conflate", true) }
        let reply = try session.roundTrip(request)
        guard let sid = reply.sid else { throw CLIFailure("the reply to sub carries no sid: \(reply.text)") }
        let resumed = position != nil && reply.resumed == true
        if let position, !resumed {
            StandardError.write(
                "runnel: cannot resume after \(position): printing what changed meanwhile from a new snapshot\n")
        }
        table.subscribed(resumed: resumed)
        return SubscriptionPrinter(
            session: session, sid: sid, showSubject: false, events: false, output: output, table: table)
    }
}
