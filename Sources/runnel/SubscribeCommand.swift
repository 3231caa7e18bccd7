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

    func validate() throws {
        if let throttle, !(throttle > 0 && throttle.isFinite) { throw ValidationError("--throttle must be > 0") }
        if let take, take < 0 { throw ValidationError("--take must be >= 0") }
    }

    /// The stage list: the shortcut options in their fixed order, then `--ops`.
    func stages() throws(CLIFailure) -> [JSONValue] {
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
        let stages = try stages()
        SignalFlag.install()
        let session = try connection.connect()
        var request = RequestLine(op: "sub")
        request.string("subject", subject)
        if !stages.isEmpty { request.json("ops", .array(stages)) }
        if positions { request.bool("positions", true) }
        if let from { request.string("from", from) }
        let reply = try session.roundTrip(request)
        guard let sid = reply.sid else { throw CLIFailure("the reply to sub carries no sid: \(reply.text)") }
        if from != nil && reply.resumed == false {
            StandardError.write("runnel: cannot resume after \(from!): values may have been missed; starting afresh\n")
        }
        try SubscriptionPrinter(
            session: session, sid: sid, showSubject: showSubject, showPositions: positions, events: events
        ).run()
    }
}
