import ArgumentParser
import RunnelClient
import RunnelJSON

/// `runnel sub SUBJECT_OR_PATTERN`: prints a subscription's values, one per line, until it ends.
struct SubscribeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sub",
        abstract: "Subscribe to a subject or pattern and print each value on its own line.",
        discussion: """
            Values are printed as the server sent them (compact JSON). --filter, --map, \
            --throttle and --take build a server-side chain in that order; --ops appends any \
            stages (a JSON array). --from resumes right after a position that --positions \
            printed (the server says when it cannot, and the subscription then starts afresh). \
            --since starts a replay or behavior subject's values at a time (what it still keeps \
            from then on, then live ones), --until ends the subscription at one; a TIME is a \
            duration ago (90s, 15m, 1h, 2d, 500ms), Unix milliseconds, or an RFC 3339 date-time \
            (2026-12-02T14:00:00Z). --ts prints each value's publish time (Unix ms) before it. \
            When the connection is lost (runneld restarted, the network), runnel connects again \
            and resumes after the last value it printed, saying so on stderr, and says when values \
            may have been missed (a subject that keeps no positions across the restart, a pattern); \
            --no-reconnect exits 1 instead. \
            On a map subject each value is printed after its key and a tab, a removed key as \
            KEY<TAB>(removed: deleted) or (removed: expired), and the end of the map's snapshot \
            (synced) is said on stderr; runnel map prints a map as a table sorted by key. \
            Exit status: 0 when the stream completes, 1 when it fails, \
            130/143 after SIGINT/SIGTERM (the subscription is removed first).
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "A subject, or a pattern such as 'sensors.*.temp' or 'logs.>'.") var subject: String
    // An expression, like a position, is taken as it is even when it starts with `-` (`-.x`).
    @Option(parsing: .unconditional, help: ArgumentHelp("Only values for which EXPR is true.", valueName: "EXPR"))
    var filter: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("Replace each value by EXPR.", valueName: "EXPR"))
    var map: String?
    @Option(help: ArgumentHelp("Send a value only after SECONDS without a newer one.", valueName: "SECONDS"))
    var throttle: Double?
    @Option(help: ArgumentHelp("Stop after N values.", valueName: "N")) var take: Int?
    @Option(help: ArgumentHelp("More stages, as a JSON array of stage objects.", valueName: "JSON")) var ops: String?
    @Flag(name: .customLong("subject"), help: "Prefix each value with its source subject and a space (patterns).")
    var showSubject = false
    @Flag(help: "Print whole event lines as received instead of values.") var events = false
    @Flag(help: "Prefix each value with its position (EPOCH:SEQ) and a space.") var positions = false
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Resume right after POS, a position --positions printed.", valueName: "POS"))
    var from: String?
    @Flag(help: "Exit (status 1) when the connection is lost, instead of connecting again and resuming.")
    var noReconnect = false
    @Flag(help: "When this reader lags, get the latest values, not every value (skips are said on stderr).")
    var conflate = false
    @Option(help: ArgumentHelp("Start at TIME: the values still kept from then on, then live ones.", valueName: "TIME"))
    var since: String?
    @Option(help: ArgumentHelp("End once the subject's time passes TIME.", valueName: "TIME")) var until: String?
    @Flag(help: "Prefix each value with its publish time (Unix milliseconds) and a space.") var ts = false

    func validate() throws {
        if let throttle, !(throttle > 0 && throttle.isFinite) { throw ValidationError("--throttle must be > 0") }
        if let take, take < 0 { throw ValidationError("--take must be >= 0") }
        if since != nil && from != nil { throw ValidationError("--since and --from cannot be given together") }
        for (option, time) in [("--since", since), ("--until", until)] {
            if let time, TimeArgument.value(time) == nil {
                throw ValidationError(
                    "\(option) must be a duration ago (90s, 15m, 1h, 2d, 500ms), Unix milliseconds, or an RFC 3339 "
                        + "date-time such as 2026-12-02T14:00:00Z")
            }
        }
    }

    /// The stage list: the shortcut options in their fixed order, then `--ops`; `--take` less
    /// the values already printed (on a new connection).
    func stages(printed: Int = 0) throws(CLIFailure) -> [JSONValue] {
        let take = take.map { $0 - printed }
        var stages = StageShortcuts.stages(filter: filter, map: map, throttle: throttle, take: take)
        if let ops {
            guard case .array(let extra) = try ValueArgument.parse(ops, option: "--ops"),
                extra.allSatisfy({ if case .object = $0 { return true } else { return false } })
            else {
                throw .usage("--ops must be a JSON array of stage objects, such as '[{\"op\":\"take\",\"count\":3}]'")
            }
            stages += extra
        }
        return stages
    }

    func run() throws {
        _ = try stages()
        SignalFlag.install()
        let output = FileDescriptorWriter(fd: 1)
        var resumeAfter = from
        var printed = 0
        var session = try connection.connect()
        while true {
            let printer = try subscribe(on: session, after: resumeAfter, printed: printed, output: output)
            let ending = try printer.run()
            printed += printer.printed
            // A pattern's values each have their own subject's position: it starts afresh.
            if !isPattern { resumeAfter = printer.lastPosition ?? resumeAfter }
            guard case .lost(let reason) = ending else { return }
            session = try connection.resume(
                after: reason, closing: session, from: resumeAfter, noReconnect: noReconnect)
        }
    }

    /// Subscribes on `session`, after `position` when there is one (saying on stderr when the
    /// server cannot resume there), and returns the printer of its events.
    private func subscribe(
        on session: RunnelSession, after position: String?, printed: Int, output: FileDescriptorWriter
    )
        throws -> SubscriptionPrinter
    {
        var request = RequestLine(op: "sub")
        request.string("subject", subject)
        let stages = try stages(printed: printed)
        if !stages.isEmpty { request.json("ops", .array(stages)) }
        // Positions are asked for whatever --positions says (a new connection resumes from them),
        // but for --events, whose lines are printed as they come.
        if positions || !events { request.bool("positions", true) }
        // `--since` starts the first subscription; a new connection resumes from a position.
        if let position {
            request.string("from", position)
        } else if let since, printed == 0 {
            request.json("since", TimeArgument.value(since)!)
        }
        if let until { request.json("until", TimeArgument.value(until)!) }
        if ts { request.bool("ts", true) }
        if conflate { request.bool("conflate", true) }
        let reply = try session.roundTrip(request)
        guard let sid = reply.sid else { throw CLIFailure("the reply to sub carries no sid: \(reply.text)") }
        if let position, reply.resumed == false {
            StandardError.write(
                "runnel: cannot resume after \(position): values may have been missed; starting afresh\n")
        } else if let since, position == nil, printed == 0, reply.resumed == false {
            StandardError.write(
                "runnel: values published since \(since) are no longer all kept: starting with the oldest kept\n")
        } else if position == nil && printed > 0 {
            StandardError.write("runnel: subscribed again without a position: values may have been missed\n")
        }
        return SubscriptionPrinter(
            session: session, sid: sid, showSubject: showSubject, showPositions: positions, showTimes: ts,
            events: events, output: output)
    }

    private var isPattern: Bool { subject.split(separator: ".").contains { $0 == "*" || $0 == ">" } }
}
