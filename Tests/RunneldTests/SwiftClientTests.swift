import Foundation
import RunnelClient
import RunnelJSON
import Synchronization
import Testing

/// The Swift client (`RunnelClient`) against real runneld processes: the behaviour checklist of
/// docs/clients.md, one test per item, as the Python and JavaScript clients run it (their
/// daemons' configs are `Tests/blackbox/client_checklist.py`'s). This suite: the items on one
/// daemon with tokens and TLS (`main`); `SwiftClientRestartTests` kills and restarts runneld,
/// `SwiftClientSlowTests` makes a slow consumer, `SwiftClientExpiryTests` uses JWTs.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SwiftClientTests {
    static let mainConfig = """
        auth_tokens = ["client-token", "revoked-token"]

        [[tokens]]
        token = "limited-token"
        publish = ["limited.>"]
        """

    let daemon: ChecklistDaemon

    init() throws { daemon = try ChecklistDaemon(toml: Self.mainConfig, tls: true) }

    /// 1: a good token works; a wrong one and none fail at connect with `unauthorized`; nothing
    /// listening is `connection_lost`.
    @Test func connectWithAGoodTokenAWrongOneAndNone() async throws {
        let client = try await ClientChecks.connect(daemon)
        #expect(try await client.request("ping")["ok"] == .bool(true))
        await client.close()
        let wrong = await ClientChecks.expectError("unauthorized") {
            _ = try await ClientChecks.connect(daemon, token: "not-a-token")
        }
        #expect(wrong?.message.isEmpty == false)
        await ClientChecks.expectError("unauthorized") { _ = try await ClientChecks.connect(daemon, token: nil) }
        let port = daemon.process.port
        daemon.kill()
        await ClientChecks.expectError("connection_lost") {
            _ = try await RunnelClient.connect(url: "runnel://127.0.0.1:\(port)", token: ChecklistDaemon.token)
        }
    }

    /// 1: a static token removed by a reload ends the connection with the server's `closing`
    /// line (`unauthorized`), which ends every subscription with that error; no reconnect.
    @Test func aTokenRemovedByAReloadEndsItsSubscriptionsWithoutReconnecting() async throws {
        let admin = try await ClientChecks.connect(daemon)
        let reasons = Reasons()
        let client = try await ClientChecks.connect(daemon, token: "revoked-token") { options in
            options.onDisconnect = { reasons.add($0) }
        }
        let subscription = try await client.subscribe("reload.a")
        let before = try await admin.request("stats")
        try daemon.reload(Self.mainConfig.replacingOccurrences(of: #", "revoked-token""#, with: ""))
        let error = await ClientChecks.expectError("unauthorized") { _ = try await ClientChecks.next(subscription) }
        #expect(error?.message == "the token was removed from the configuration")
        #expect(reasons.all.map(\.code) == ["unauthorized"])
        await ClientChecks.expectError("unauthorized") { try await client.publish("reload.a", .number(1), reply: true) }
        _ = try await ClientChecks.stats(admin) {
            ClientChecks.number($0, "connections") == ClientChecks.number(before, "connections") - 1
        }
        await client.close()
        await admin.close()
    }

    /// 2: TCP and TLS publish and subscribe, with a 300 KB value; a certificate the client does
    /// not trust fails the connection.
    @Test func everyTransportPublishesAndSubscribes() async throws {
        let publisher = try await ClientChecks.connect(daemon)
        var trusting = ClientOptions()
        trusting.tls = TLSSettings(caFile: daemon.certificates?.path("ca.pem"))
        for (scheme, url) in [("runnel", daemon.url), ("runnels", daemon.tlsURL)] {
            let client = try await RunnelClient.connect(url: url, token: ChecklistDaemon.token, options: trusting)
            let subject = "transport.\(scheme)"
            let subscription = try await client.subscribe(subject, SubscribeOptions(map: ".n"))
            #expect(try await publisher.publish(subject, .object(JSONObject([("n", .number(21))])), reply: true) == 1)
            let big = String(repeating: "x", count: 300_000)
            try await client.publish(subject, .object(JSONObject([("n", .string(big))])))
            let events = try await ClientChecks.take(subscription, 2)
            #expect(ClientChecks.values(events) == [.number(21), .string(big)], "\(scheme)")
            if case .value(let first) = events[0] {
                #expect(first.subject == subject && first.position?.hasSuffix(":1") == true)
            }
            await client.close()
        }
        let untrusted = await ClientChecks.expectError("connection_lost") {
            _ = try await RunnelClient.connect(url: daemon.tlsURL, token: ChecklistDaemon.token)
        }
        #expect(untrusted?.message.contains("TLS") == true, "\(String(describing: untrusted))")
        await publisher.close()
    }

    /// 3: `publish` without a reply returns at once, with one returns `receivers`; a quiet
    /// publish that fails reaches `onError`, one with a reply throws; a missing right is
    /// `unauthorized` with the server's message.
    @Test func publishWithAndWithoutAReply() async throws {
        let failures = Reasons()
        let client = try await ClientChecks.connect(daemon) { $0.onError = { failures.add($0) } }
        let first = try await client.subscribe("pub.a")
        let second = try await client.subscribe("pub.>")
        let object = JSONValue.object(JSONObject([("k", .number(1))]))
        #expect(try await client.publish("pub.a", object, reply: true) == 2)
        #expect(try await client.publish("pub.a", .array([.number(2)])) == nil)
        #expect(ClientChecks.values(try await ClientChecks.take(first, 2)) == [object, .array([.number(2)])])
        let patterned = try await ClientChecks.take(second, 2)
        #expect(
            patterned.map { if case .value(let v) = $0 { return v.subject } else { return "" } } == ["pub.a", "pub.a"])
        #expect(try await client.publish("nobody.here", .null, reply: true) == 0)
        _ = try await client.request("complete", ["subject": .string("pub.a")])
        try await client.publish("pub.a", .number(3))
        _ = try await client.request("ping")  // answered after the publish's failure, in order
        #expect(failures.all.map(\.code) == ["terminated"])
        await ClientChecks.expectError("terminated") { try await client.publish("pub.a", .number(4), reply: true) }
        let limited = try await ClientChecks.connect(daemon, token: "limited-token")
        #expect(try await limited.publish("limited.x", .number(1), reply: true) == 0)
        let refused = await ClientChecks.expectError("unauthorized") {
            try await limited.publish("pub.b", .number(1), reply: true)
        }
        #expect(refused?.message.contains("may not publish to pub.b") == true)
        await limited.close()
        await client.close()
    }

    /// 4: one error type with `code`, `message`, `stage`; a stage failing at run time (`eval`)
    /// or a subject's `error` ends the subscription with that error.
    @Test func typedErrorsCarryCodeMessageAndStage() async throws {
        let client = try await ClientChecks.connect(daemon)
        let badExpression = await ClientChecks.expectError("bad_expr") {
            _ = try await client.subscribe("err.a", SubscribeOptions(filter: ".a > 1", map: ".b +"))
        }
        #expect(badExpression?.stage == 1 && badExpression?.message.isEmpty == false)
        let badOperator = await ClientChecks.expectError("bad_operator") {
            _ = try await client.subscribe(
                "err.a", SubscribeOptions(ops: [.object(JSONObject([("op", .string("nosuch"))]))]))
        }
        #expect(badOperator?.stage == 0)
        await ClientChecks.expectError("bad_request") { _ = try await client.subscribe("bad name") }
        let replay: KeyValuePairs<String, JSONValue> = [
            "subject": .string("err.r"), "kind": .string("replay"), "capacity": .number(2),
        ]
        _ = try await client.request("create", replay)
        let mismatch = await ClientChecks.expectError("kind_mismatch") {
            _ = try await client.request(
                "create", ["subject": .string("err.r"), "kind": .string("replay"), "capacity": .number(3)])
        }
        #expect(mismatch != nil && mismatch?.stage == nil)
        let failing = try await client.subscribe("err.eval", SubscribeOptions(map: ".n + 1"))
        try await client.publish("err.eval", .object(JSONObject([("n", .string("text"))])))
        let evaluation = await ClientChecks.expectError("eval") { _ = try await ClientChecks.next(failing) }
        #expect(evaluation?.stage == 0)
        let ended = try await client.subscribe("err.subject")
        _ = try await client.request("error", ["subject": .string("err.subject"), "message": .string("it broke")])
        let subjectError = await ClientChecks.expectError("subject_error") { _ = try await ClientChecks.next(ended) }
        #expect(subjectError?.message == "it broke")
        await client.close()
    }

    /// 5: `filter`, `map`, `throttle` and `ops`, iterated (ending at completion); `unsubscribe`.
    @Test func subscribeWithStagesAsAnAsyncSequence() async throws {
        let client = try await ClientChecks.connect(daemon)
        let hot = try await client.subscribe(
            "cpu",
            SubscribeOptions(
                filter: ".load > 0.9", map: ".host",
                ops: [.object(JSONObject([("op", .string("take")), ("count", .number(2))]))]))
        let throttled = try await client.subscribe("cpu", SubscribeOptions(map: ".host", throttle: 0.05))
        let unsubscribed = try await client.subscribe("cpu", SubscribeOptions(filter: ".load < 0.5", map: ".host"))
        for (host, load) in [("a", 0.95), ("b", 0.2), ("c", 0.99), ("d", 0.97)] {
            try await client.publish("cpu", .object(JSONObject([("host", .string(host)), ("load", .number(load))])))
        }
        #expect(ClientChecks.values(try await ClientChecks.take(hot, 2)) == [.string("a"), .string("c")])
        #expect(try await ClientChecks.ends(hot))
        #expect(ClientChecks.values(try await ClientChecks.take(throttled, 1)) == [.string("d")])
        #expect(ClientChecks.values(try await ClientChecks.take(unsubscribed, 1)) == [.string("b")])
        let before = try await client.request("stats")
        await unsubscribed.unsubscribe()
        #expect(try await ClientChecks.ends(unsubscribed))
        let after = try await client.request("stats")
        #expect(ClientChecks.number(after, "subscriptions") == ClientChecks.number(before, "subscriptions") - 1)
        // A subscription the server completes ends its iteration; a sid is never reused.
        let completes = try await client.subscribe(
            "cpu", SubscribeOptions(ops: [.object(JSONObject([("op", .string("take")), ("count", .number(1))]))]))
        try await client.publish("cpu", .object(JSONObject([("host", .string("e")), ("load", .number(0.1))])))
        #expect(try await ClientChecks.take(completes, 1).count == 1)
        #expect(try await ClientChecks.ends(completes))
        #expect(Set([hot.sid, throttled.sid, unsubscribed.sid, completes.sid]).count == 4)
        await client.close()
    }

    /// 6: every value carries its `EPOCH:SEQ`; `from` continues exactly after a position; a
    /// `from` the server cannot continue from is a gap, then what a plain `sub` gets.
    @Test func positionsAndFrom() async throws {
        let client = try await ClientChecks.connect(daemon)
        _ = try await client.request(
            "create", ["subject": .string("pos.r"), "kind": .string("replay"), "capacity": .number(10)])
        for n in 1...5 { try await client.publish("pos.r", .number(Double(n))) }
        let everything = try await client.subscribe("pos.r")
        let positions = try await ClientChecks.take(everything, 5).compactMap {
            if case .value(let value) = $0 { return value.position } else { return nil }
        }
        #expect(Set(positions.map { $0.split(separator: ":").first! }).count == 1)
        #expect(positions.map { $0.split(separator: ":").last! } == ["1", "2", "3", "4", "5"])
        #expect(everything.position == positions.last)
        let after = try await client.subscribe("pos.r", SubscribeOptions(from: positions[1]))
        #expect(ClientChecks.values(try await ClientChecks.take(after, 3)) == [3, 4, 5].map { .number($0) })
        try await client.publish("pos.r", .number(6))
        #expect(ClientChecks.values(try await ClientChecks.take(after, 1)) == [.number(6)])
        let lost = try await client.subscribe("pos.r", SubscribeOptions(from: "another-epoch:3"))
        let events = try await ClientChecks.take(lost, 7)
        guard case .gap(let gap) = events[0] else { throw HarnessError.badJSON("no gap first: \(events[0])") }
        #expect(gap == Gap(.notResumed))
        #expect(ClientChecks.values(events) == (1...6).map { .number(Double($0)) })
        await client.close()
    }

    /// 17: `since` starts a replay subject at a time, with a `.gap(.notResumed)` first when
    /// some of its values are gone; `until` completes it; `timestamps` gives each value its
    /// publish time (version 1.3).
    @Test func historyByTime() async throws {
        let client = try await ClientChecks.connect(daemon)
        _ = try await client.request(
            "create", ["subject": .string("hist.r"), "kind": .string("replay"), "capacity": .number(3)])
        // The client's clock around each publish (one machine, one clock), 20 ms apart.
        var bounds: [ClosedRange<Int64>] = []
        for n in 1...4 {
            try await Task.sleep(for: .milliseconds(20))
            let before = Self.unixMilliseconds()
            try await client.publish("hist.r", .number(Double(n)), reply: true)
            bounds.append(before...Self.unixMilliseconds())
        }
        try await Task.sleep(for: .milliseconds(20))
        let window = try await client.subscribe(
            "hist.r", SubscribeOptions(since: bounds[2].lowerBound, until: bounds[3].upperBound, timestamps: true))
        let values = try await ClientChecks.take(window, 2).compactMap {
            if case .value(let value) = $0 { return value } else { return nil }
        }
        #expect(values.map(\.value) == [.number(3), .number(4)])
        #expect(values.count == 2 && bounds[2].contains(values[0].time ?? 0) && bounds[3].contains(values[1].time ?? 0))
        #expect(try await ClientChecks.ends(window))
        // 1 is gone (capacity 3): a gap first, then what is kept, without times.
        let evicted = try await client.subscribe("hist.r", SubscribeOptions(since: bounds[0].lowerBound))
        let events = try await ClientChecks.take(evicted, 4)
        guard case .gap(let gap) = events[0] else { throw HarnessError.badJSON("no gap: \(events[0])") }
        #expect(gap.reason == .notResumed)
        #expect(ClientChecks.values(Array(events.dropFirst())) == [.number(2), .number(3), .number(4)])
        #expect(events.allSatisfy { if case .value(let value) = $0 { value.time == nil } else { true } })
        await evicted.unsubscribe()
        await client.close()
    }

    private static func unixMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// 16: `whileWatched` calls `start` when the first subscription to the subject comes and
    /// `stop` when the last goes (a pattern's counts too), on transitions only; a pattern or a
    /// `$` name is `bad_request`.
    @Test func whileWatchedStartsAndStopsAFeedOnTheFirstAndLastSubscriber() async throws {
        let feed = try await ClientChecks.connect(daemon)
        let calls = Calls()
        let watch = try await feed.whileWatched("ww.feed", start: { calls.add("start") }, stop: { calls.add("stop") })
        let reader = try await ClientChecks.connect(daemon)
        let first = try await reader.subscribe("ww.feed")
        #expect(try await calls.become(["start"]))
        let pattern = try await reader.subscribe("ww.>")
        await first.unsubscribe()
        await pattern.unsubscribe()
        #expect(try await calls.become(["start", "stop"]))
        // Cancelled, it calls nothing more.
        watch.cancel()
        await watch.value
        _ = try await reader.subscribe("ww.feed")
        try await Task.sleep(for: .milliseconds(300))
        #expect(calls.all == ["start", "stop"])
        for subject in ["ww.*", "$sys.occupancy.ww.feed"] {
            await ClientChecks.expectError("bad_request") {
                _ = try await feed.whileWatched(subject, start: {}, stop: {})
            }
        }
        await reader.close()
        await feed.close()
    }

    /// 11: a clean close disposes the server's subscriptions (`stats` back to what it was);
    /// calls after it fail with `closed`.
    @Test func cleanCloseDisposesTheServersSubscriptions() async throws {
        let admin = try await ClientChecks.connect(daemon)
        let before = try await ClientChecks.stats(admin) { ClientChecks.number($0, "connections") == 1 }
        let client = try await ClientChecks.connect(daemon)
        _ = try await client.subscribe("close.a", SubscribeOptions(throttle: 30))  // a value waiting holds a timer
        _ = try await client.subscribe("close.>", SubscribeOptions(filter: ".x > 1"))
        _ = try await client.subscribe(
            "close.b",
            SubscribeOptions(ops: [.object(JSONObject([("op", .string("delay")), ("seconds", .number(30))]))]))
        let five = JSONValue.object(JSONObject([("x", .number(5))]))
        try await client.publish("close.a", five)
        try await client.publish("close.b", five)
        let during = try await ClientChecks.stats(admin) {
            ClientChecks.number($0, "timers") >= ClientChecks.number(before, "timers") + 2
        }
        #expect(ClientChecks.number(during, "subscriptions") == ClientChecks.number(before, "subscriptions") + 3)
        #expect(ClientChecks.number(during, "connections") == ClientChecks.number(before, "connections") + 1)
        await client.close()
        _ = try await ClientChecks.stats(admin) { stats in
            ["connections", "subscriptions", "timers"].allSatisfy {
                ClientChecks.number(stats, $0) == ClientChecks.number(before, $0)
            }
        }
        await ClientChecks.expectError("closed") { try await client.publish("close.a", .number(1)) }
        await admin.close()
    }

    /// 12: a connection the network dropped without a word is taken for lost when its keep-alive
    /// `ping` goes unanswered, and the subscription resumes on a new one with nothing lost; a
    /// quiet connection that answers is kept.
    @Test func aConnectionGoneSilentIsNoticedByTheKeepaliveAndResumed() async throws {
        let network = try SilentNetwork(upstream: Int(daemon.process.port))
        defer { network.stop() }
        let admin = try await ClientChecks.connect(daemon)
        let replay: KeyValuePairs<String, JSONValue> = [
            "subject": .string("silent.r"), "kind": .string("replay"), "capacity": .number(100),
        ]
        _ = try await admin.request("create", replay)
        let reasons = Reasons()
        var options = ClientOptions()
        options.keepalive = .seconds(1)
        options.timeout = .seconds(1)
        options.onDisconnect = { reasons.add($0) }
        let client = try await RunnelClient.connect(
            url: "runnel://127.0.0.1:\(network.port)", token: ChecklistDaemon.token, options: options)
        let subscription = try await client.subscribe("silent.r")
        #expect(try await admin.publish("silent.r", .number(0), reply: true) == 1)
        #expect(ClientChecks.values(try await ClientChecks.take(subscription, 1)) == [.number(0)])
        network.silence()
        for n in 1...5 { _ = try await admin.publish("silent.r", .number(Double(n)), reply: true) }
        let values = ClientChecks.values(try await ClientChecks.take(subscription, 5))
        #expect(values == (1...5).map { JSONValue.number(Double($0)) })
        #expect(
            reasons.all.map { [$0.code, $0.message] } == [
                ["connection_lost", "no answer to a keep-alive ping within 1 s"]
            ])
        try await Task.sleep(for: .seconds(3))
        #expect(reasons.all.count == 1 && client.isConnected)
        await client.close()
        await admin.close()
    }
}

/// The reasons a client's callback was given, in order.
///
/// Thread rules: behind a mutex, any thread (the client's reader thread adds). Lifetime rule:
/// none.
/// What a check's callbacks were called with, in order.
///
/// Thread rules: behind a mutex, any thread (the callbacks run on the client's tasks). Lifetime
/// rule: none.
final class Calls: Sendable {
    private let calls = Mutex<[String]>([])
    var all: [String] { calls.withLock { $0 } }
    func add(_ call: String) { calls.withLock { $0.append(call) } }

    /// Whether the calls are `expected` within 5 s.
    func become(_ expected: [String]) async throws -> Bool {
        for _ in 0..<100 where all != expected { try await Task.sleep(for: .milliseconds(50)) }
        return all == expected
    }
}

final class Reasons: Sendable {
    private let reasons = Mutex<[RunnelError]>([])

    func add(_ reason: RunnelError) { reasons.withLock { $0.append(reason) } }

    var all: [RunnelError] { reasons.withLock { $0 } }
}
