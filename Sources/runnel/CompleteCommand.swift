import ArgumentParser
import RunnelClient

/// `runnel complete SUBJECT`: completes a subject.
struct CompleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "complete", abstract: "Complete a subject: its subscriptions get 'completed'.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The subject's name.") var subject: String

    func run() throws {
        var request = RequestLine(op: "complete")
        request.string("subject", subject)
        _ = try connection.connect().roundTrip(request)
    }
}
