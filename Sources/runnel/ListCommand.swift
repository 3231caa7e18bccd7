import ArgumentParser
import RunnelClient
import RunnelJSON

/// `runnel list [PREFIX]`: the subjects as an aligned table.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List subjects: kind, capacity, retain_s, keys, durable, subscribers, published, terminated.",
        discussion: """
            A map subject's CAPACITY is its max_keys, its RETAIN_S its ttl_s, and KEYS how many \
            keys it holds now; --json shows the server's own fields.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "Only subjects whose names start with PREFIX.") var prefix: String?
    @Flag(help: "Print the server's reply as it is.") var json = false

    func run() throws {
        var request = RequestLine(op: "list")
        if let prefix { request.string("prefix", prefix) }
        let reply = try connection.connect().roundTrip(request)
        if json {
            print(reply.text)
            return
        }
        var table = TextTable(header: [
            "SUBJECT", "KIND", "CAPACITY", "RETAIN_S", "KEYS", "DURABLE", "SUBSCRIBERS", "PUBLISHED", "TERMINATED",
        ])
        for entry in try Self.entries(of: reply) {
            let columns: [JSONValue?] = [
                entry["subject"], entry["kind"], entry["capacity"] ?? entry["max_keys"],
                entry["retain_s"] ?? entry["ttl_s"], entry["keys"], entry["durable"], entry["subscribers"],
                entry["published"], entry["terminated"],
            ]
            table.add(columns.map(Self.cell))
        }
        print(table.rendered, terminator: "")
    }

    /// The entries of a reply to `list`.
    static func entries(of reply: ServerLine) throws(CLIFailure) -> [JSONObject] {
        let decoded: JSONValue
        do throws(JSONError) {
            decoded = try JSONParser().parse(reply.bytes)
        } catch {
            throw CLIFailure("unreadable reply to list: \(error)")
        }
        guard case .object(let object) = decoded, case .array(let subjects)? = object["subjects"] else {
            throw CLIFailure("reply to list has no 'subjects': \(reply.text)")
        }
        var entries: [JSONObject] = []
        for case .object(let entry) in subjects { entries.append(entry) }
        return entries
    }

    /// A field as table text: strings unquoted, absent as `-`.
    static func cell(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: return "-"
        case .string(let text)?: return text
        case .bool(let flag)?: return flag ? "yes" : "no"
        case let other?: return other.jsonText
        }
    }
}
