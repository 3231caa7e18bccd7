import Glibc
import RunnelClient
import RunnelJSON

/// Throughput through the Swift client, 1 publisher to 1 subscriber: two clients (two
/// connections) to one server on loopback. The publisher sends COUNT values of 64 bytes as fast
/// as its client takes them; the time runs from the first publish to the subscriber's receipt
/// of the last, and every value must arrive, in order. The subscriber iterates (`for try await`)
/// with `Overflow.wait`, so nothing is dropped in the client, as throughput.py's Python one.
///
///     ThroughputSwift runnel://127.0.0.1:PORT [COUNT]
///
/// Prints one JSON line: client, mode, count, seconds, msgs_per_s.
///
/// Thread rules: `main` runs on the main actor, so it only calls `measure`, which is not
/// isolated (every client call from the main actor would hop off it and back). Lifetime rule:
/// both clients are closed before it returns.
@main struct Throughput {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2, let count = Int(arguments.count > 2 ? arguments[2] : "200000"), count > 0 else {
            print("usage: ThroughputSwift runnel://HOST:PORT [COUNT]")
            exit(2)
        }
        try await measure(url: arguments[1], count: count)
    }

    static func measure(url: String, count: Int) async throws {
        // 64 bytes of JSON: a string of 62 characters and its quotes; the last one is all "e"s.
        let payload = try RawJSON(validating: "\"" + String(repeating: "x", count: 62) + "\"")
        let end = try RawJSON(validating: "\"" + String(repeating: "e", count: 62) + "\"")
        var options = ClientOptions()
        options.overflow = .wait
        let publisher = try await RunnelClient.connect(url: url)
        let subscriber = try await RunnelClient.connect(url: url, options: options)
        let subscription = try await subscriber.subscribe("bench.clients")
        let endBytes = end.description.utf8.map { $0 }
        let consumer = Task {
            var received = 0
            for try await event in subscription {
                guard case .value(let value) = event else { continue }
                received += 1
                if value.json == endBytes { break }
            }
            return (received, ContinuousClock.now)
        }
        let started = ContinuousClock.now
        for n in 0..<count { try await publisher.publish("bench.clients", json: n == count - 1 ? end : payload) }
        let (received, finished) = try await consumer.value
        await publisher.close()
        await subscriber.close()
        guard received == count else {
            print("runnel.swift: \(received) of \(count) values arrived")
            exit(1)
        }
        let elapsed = (finished - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        print(
            #"{"client": "runnel.swift", "mode": "iterator", "count": \#(count), "seconds": \#(seconds), "msgs_per_s": \#(Int(Double(count) / seconds))}"#
        )
    }
}
