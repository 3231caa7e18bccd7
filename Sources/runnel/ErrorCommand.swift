import ArgumentParser
import RunnelClient

/// `runnel error SUBJECT MESSAGE`: terminates a subject with an error.
struct ErrorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "error", abstract: "Terminate a subject with an error message.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The subject's name.") var subject: String
    @Argument(help: "The error message subscribers get.") var message: String

    func run() throws {
        var request = RequestLine(op: "error")
        request.string("subject", subject)
        request.string("message", message)
        _ = try connection.connect().roundTrip(request)
    }
}
