import ArgumentParser
import RunnelClient

/// `runnel delete SUBJECT`: completes a subject's subscriptions and frees the name.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a subject (its subscriptions complete).")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The subject's name.") var subject: String

    func run() throws {
        var request = RequestLine(op: "delete")
        request.string("subject", subject)
        _ = try connection.connect().roundTrip(request)
    }
}
