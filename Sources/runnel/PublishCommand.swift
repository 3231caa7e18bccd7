import ArgumentParser
import RunnelClient
import RunnelJSON

/// `runnel pub SUBJECT [VALUE]`: publishes one value, or every line of stdin; with `--key`,
/// writes a map subject's key (or removes it, `--delete`).
struct PublishCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pub",
        abstract: "Publish VALUE to SUBJECT, or without VALUE every line of stdin.",
        discussion: """
            VALUE (and each stdin line) is sent as JSON when it parses as JSON, else as a JSON \
            string: `runnel pub n 42` sends 42, `runnel pub log 'disk full'` sends "disk full". \
            A VALUE starting with - is a number (`runnel pub t -5`) or an unknown option; text \
            that starts with - goes as a JSON string: `runnel pub log '"-x"'`. \
            Stdin lines are pipelined, so `tail -F app.log | runnel pub logs.app` keeps up; at \
            end of input runnel waits until the server has handled every line. Any refused \
            line is reported on stderr and makes the exit status 1. \
            On a map subject (runnel create S --kind map) --key KEY writes the value under KEY \
            (each stdin line in turn), and --key KEY --delete removes KEY (no value).
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The subject to publish to.") var subject: String
    /// Every input no option took, so that a negative number (`runnel pub t -5`) is a value
    /// and not an unknown option; `validate()` keeps it to one, and refuses any other input
    /// that starts with `-` as the unknown option it is.
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp(
            "The value (JSON, or text sent as a string). Omit to publish stdin lines.", valueName: "value"))
    var values: [String] = []
    // A key, like an expression, is taken as it is even when it starts with `-`.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Write the value under KEY of a map subject.", valueName: "KEY"))
    var key: String?
    @Flag(help: "Remove --key's KEY from the map instead (no value).") var delete = false

    var value: String? { values.first }

    func validate() throws {
        if values.count > 1 { throw ValidationError("one value at most; got \(values.count): \(values)") }
        if let value, value.hasPrefix("-"), (try? RawJSON(validating: value)) == nil {
            throw ValidationError("Unknown option '\(value)'")
        }
        if delete && key == nil { throw ValidationError("--delete needs --key KEY, the key to remove") }
        if delete && value != nil { throw ValidationError("--delete takes no value") }
    }

    func run() throws {
        let session = try connection.connect()
        var request = RequestLine(op: "pub")
        request.string("subject", subject)
        if let key { request.string("key", key) }
        if delete {
            request.bool("delete", true)
        } else if let value {
            request.raw("value", ValueArgument.json(from: value))
        } else {
            let failures = try StdinPublisher(session: session, subject: subject, key: key).run()
            if failures > 0 { throw ExitCode(CLIFailure.runtimeStatus) }
            return
        }
        _ = try session.roundTrip(request)
    }
}
