import ArgumentParser
import RunnelClient
import RunnelJSON

/// `runnel create SUBJECT`: creates a subject of a kind (a no-op when it exists alike).
struct CreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create a subject (kind subject, replay, behavior or map).")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The subject's name.") var subject: String
    @Option(help: "subject, replay, behavior or map.") var kind: SubjectKind = .subject
    @Option(help: "How many values a replay subject keeps (default: the server's).") var capacity: Int?
    @Option(help: ArgumentHelp("A behavior subject's initial value (JSON).", valueName: "JSON")) var value: String?
    @Flag(help: "Keep it on the server's disk across restarts (replay and behavior; needs data_dir).")
    var durable = false
    @Option(
        name: .customLong("retain-s"),
        help: ArgumentHelp("Let a replay subject's values go once older than SECONDS.", valueName: "SECONDS"))
    var retainSeconds: Double?
    @Option(
        name: .customLong("ttl-s"),
        help: ArgumentHelp("Remove a map's key once it has not been written for SECONDS.", valueName: "SECONDS"))
    var ttlSeconds: Double?
    @Option(
        name: .customLong("max-keys"),
        help: ArgumentHelp("How many keys a map may hold (default: the server's max_map_keys).", valueName: "N"))
    var maxKeys: Int?

    func validate() throws {
        if let capacity, capacity < 0 { throw ValidationError("--capacity must be >= 0") }
        if capacity != nil && kind != .replay { throw ValidationError("--capacity applies only to --kind replay") }
        if value != nil && kind != .behavior { throw ValidationError("--value applies only to --kind behavior") }
        if durable && kind == .subject { throw ValidationError("--durable applies only to --kind replay or behavior") }
        if let retainSeconds {
            guard kind == .replay else { throw ValidationError("--retain-s applies only to --kind replay") }
            guard retainSeconds > 0 && retainSeconds.isFinite else { throw ValidationError("--retain-s must be > 0") }
        }
        if let ttlSeconds {
            guard kind == .map else { throw ValidationError("--ttl-s applies only to --kind map") }
            guard ttlSeconds > 0 && ttlSeconds.isFinite else { throw ValidationError("--ttl-s must be > 0") }
        }
        if let maxKeys {
            guard kind == .map else { throw ValidationError("--max-keys applies only to --kind map") }
            guard maxKeys >= 1 else { throw ValidationError("--max-keys must be >= 1") }
        }
    }

    func run() throws {
        var request = RequestLine(op: "create")
        request.string("subject", subject)
        request.string("kind", kind.rawValue)
        if let capacity { request.integer("capacity", capacity) }
        if durable { request.bool("durable", true) }
        if let retainSeconds { request.json("retain_s", .number(retainSeconds)) }
        if let ttlSeconds { request.json("ttl_s", .number(ttlSeconds)) }
        if let maxKeys { request.integer("max_keys", maxKeys) }
        if let value {
            guard let raw = try? RawJSON(validating: value) else {
                throw CLIFailure.usage("--value is not valid JSON: \(value)")
            }
            request.raw("value", raw)
        }
        _ = try connection.connect().roundTrip(request)
    }
}

/// `--kind` takes the protocol's kind names.
extension SubjectKind: ExpressibleByArgument {}
