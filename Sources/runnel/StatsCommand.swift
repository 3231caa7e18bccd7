import ArgumentParser
import RunnelClient
import RunnelJSON

/// `runnel stats`: the server's counters as `key: value` lines, or the raw reply with `--json`.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Show the server's counters (connections, subscriptions, traffic...).")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the server's reply as it is.") var json = false

    func run() throws {
        let reply = try connection.connect().roundTrip(RequestLine(op: "stats"))
        if json {
            print(reply.text)
            return
        }
        let decoded: JSONValue
        do throws(JSONError) {
            decoded = try JSONParser().parse(reply.bytes)
        } catch {
            throw CLIFailure("unreadable reply to stats: \(error)")
        }
        guard case .object(let object) = decoded else { throw CLIFailure("reply to stats is not an object") }
        let shown = object.members.filter { $0.key != "ok" && $0.key != "ref" }
        let width = shown.map { $0.key.count }.max() ?? 0
        for member in shown {
            let padding = String(repeating: " ", count: width - member.key.count)
            print("\(member.key):\(padding) \(ListCommand.cell(member.value))")
        }
    }
}
