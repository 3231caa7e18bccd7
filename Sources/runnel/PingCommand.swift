import ArgumentParser
import RunnelClient

/// `runnel ping`: one round trip; prints `pong` and the time it took. The Docker HEALTHCHECK.
struct PingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ping", abstract: "Check that the server answers; prints 'pong' and the round-trip time.")

    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let session = try connection.connect()
        let start = MonotonicClock.nanoseconds
        _ = try session.roundTrip(RequestLine(op: "ping"))
        let elapsed = Double(MonotonicClock.nanoseconds - start) / 1_000_000
        print("pong \(Self.format(milliseconds: elapsed)) ms")
    }

    /// Three decimals, without Foundation's formatting.
    static func format(milliseconds: Double) -> String {
        let thousandths = Int((milliseconds * 1000).rounded())
        let fraction = String(thousandths % 1000)
        return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
