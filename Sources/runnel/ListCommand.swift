import ArgumentParser
import RunnelClient
import RunnelJSON

/// `runnel list [PREFIX]`: the subjects as an aligned table.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List subjects: kind, capacity, retain_s, durable, subscribers, published, terminated.")

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
        let decoded: JSONValue
        do throws(JSONError) {
            decoded = try JSONParser().parse(reply.bytes)
        } catch {
            throw CLIFailure("unreadable reply to list: \(error)")
        }
        guard case .object(let object) = decoded, case .array(let subjects)? = object["subjects"] else {
            throw CLIFailure("reply to list has no 'subjects': \(reply.text)")
        }
        var table = TextTable(header: [
            "SUBJECT", "KIND", "CAPACITY", "RETAIN_S", "DURABLE", "SUBSCRIBERS", "PUBLISHED", "TERMINATED",
        ])
        for case .object(let entry) in subjects {
            table.add(
                ["subject", "kind", "capacity", "retain_s", "durable", "subscribers", "published", "terminated"].map {
                    Self.cell(entry[$0])
                })
        }
        print(table.rendered, terminator: "")
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
