import Foundation
import RunnelClient
import RunnelJSON
import RunnelTestSupport
import Testing

/// What the Swift client's checks share: connecting with the checklist's token, taking events
/// within a deadline, expecting an error's code, polling the server's `stats`, and signing the
/// `expiry` checks' JWTs (with `openssl`, as `TestCertificates` makes certificates).
///
/// Thread rules: stateless, any task. Lifetime rule: none (a namespace).
enum ClientChecks {
    /// Seconds for any one thing to happen.
    static let deadline: Duration = .seconds(10)

    /// A client of `daemon` with the checklist's token (unless another is given), its options as
    /// `configure` sets them.
    static func connect(
        _ daemon: ChecklistDaemon, token: String? = ChecklistDaemon.token, _ configure: (inout ClientOptions) -> Void
    ) async throws -> RunnelClient {
        var options = ClientOptions()
        configure(&options)
        return try await RunnelClient.connect(url: daemon.url, token: token, options: options)
    }

    static func connect(_ daemon: ChecklistDaemon, token: String? = ChecklistDaemon.token) async throws
        -> RunnelClient
    {
        try await connect(daemon, token: token) { _ in }
    }

    /// The next `count` events, each within the deadline.
    static func take(_ subscription: Subscription, _ count: Int, within limit: Duration = deadline) async throws
        -> [SubscriptionEvent]
    {
        var events: [SubscriptionEvent] = []
        for _ in 0..<count {
            guard let event = try await next(subscription, within: limit) else {
                throw HarnessError.closed("the subscription ended after \(events.count) events")
            }
            events.append(event)
        }
        return events
    }

    /// The decoded values of `events` (gaps left out).
    static func values(_ events: [SubscriptionEvent]) -> [JSONValue] {
        events.compactMap { if case .value(let value) = $0 { return value.value } else { return nil } }
    }

    /// Values until one equals `last`; the gaps met, with how many values came before each.
    static func values(_ subscription: Subscription, until last: JSONValue) async throws -> (
        values: [JSONValue], gaps: [(at: Int, gap: Gap)]
    ) {
        var values: [JSONValue] = []
        var gaps: [(at: Int, gap: Gap)] = []
        while values.last != last {
            switch try await next(subscription) {
            case .value(let value)?: values.append(value.value)
            case .gap(let gap)?: gaps.append((values.count, gap))
            case nil: throw HarnessError.closed("the subscription ended after \(values)")
            }
        }
        return (values, gaps)
    }

    /// Whether the subscription ends (without an error) within the deadline.
    static func ends(_ subscription: Subscription) async throws -> Bool {
        try await next(subscription) == nil
    }

    /// The subscription's next event (nil at its end), within `limit`.
    static func next(_ subscription: Subscription, within limit: Duration = deadline) async throws
        -> SubscriptionEvent?
    {
        try await within(limit) {
            var iterator = subscription.makeAsyncIterator()
            return try await iterator.next()
        }
    }

    /// The error `body` throws; fails the test when it throws none or another code.
    @discardableResult
    static func expectError(_ code: String, _ body: () async throws -> Void) async -> RunnelError? {
        do {
            try await body()
            Issue.record("no \(code) error")
        } catch let error as RunnelError {
            #expect(error.code == code, "\(error)")
            return error
        } catch {
            Issue.record("not a RunnelError: \(error)")
        }
        return nil
    }

    /// `stats` over `client`, polled every 50 ms until `predicate` holds.
    static func stats(
        _ client: RunnelClient, within limit: Duration = deadline, until predicate: (JSONObject) -> Bool
    ) async throws -> JSONObject {
        let end = ContinuousClock.now + limit
        while true {
            let stats = try await client.request("stats")
            if predicate(stats) { return stats }
            guard ContinuousClock.now < end else { throw HarnessError.timeout("stats never as expected: \(stats)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    static func number(_ object: JSONObject, _ key: String) -> Int {
        if case .number(let value)? = object[key] { return Int(value) }
        return -1
    }

    /// Runs `body`, failing when it takes longer than `limit` (it is cancelled).
    static func within<Result: Sendable>(
        _ limit: Duration, _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else {
                throw HarnessError.timeout("nothing within \(limit)")
            }
            return result
        }
    }

    /// An HS256 JWT for the `expiry` daemon that expires `seconds` from now (in the past when
    /// negative), with the rights to publish and subscribe to `expiry.>`.
    static func expiringToken(_ seconds: Int) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let claims = base64URL(
            Data(
                #"{"sub":"checklist","iat":\#(now),"exp":\#(now + seconds),"runnel":{"publish":["expiry.>"],"subscribe":["expiry.>"]}}"#
                    .utf8))
        let signed = header + "." + claims
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "dgst", "-sha256", "-binary", "-hmac", ChecklistDaemon.jwtSecret]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(signed.utf8))
        try input.fileHandleForWriting.close()
        let signature = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, signature.count == 32 else {
            throw HarnessError.launch("openssl could not sign")
        }
        return signed + "." + base64URL(signature)
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
