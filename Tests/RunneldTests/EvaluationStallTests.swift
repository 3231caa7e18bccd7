import Foundation
import RunnelTestSupport
import Synchronization
import Testing

/// The evaluation stall, in the hostile suite: one client holding 10,000 subscriptions to one
/// subject, each with a `map` of its own, and 1 MB values published to it. Without bounds on
/// the sum of evaluations the first value held the loop for 13.8 s (release build); with the
/// defaults (`max_eval_steps_per_second`, `max_eval_steps_burst`, `max_publish_eval_ms`) the
/// attacker's subscriptions end with `eval` / "limit" but for the few its budget affords,
/// everyone else is served, and another client's pings are answered within 100 ms throughout.
extension HostileClientTests {
    /// The longest a ping may wait while the attack runs: 100 ms (the contract's bound) against
    /// an optimized runneld (`RUNNELD_PATH=.build/release/runneld`, as CI runs this test once
    /// more, on its own). A debug build ends each refused subscription several times slower
    /// (~8 µs each, 84 ms for 10,000) and runs among the whole suite's parallel tests on two
    /// cores: on this machine kind its worst ping measured 0.33-0.36 s alone (the same for
    /// 440300c's build and a later one's) and 0.59-0.66 s in the full suite, so it gets 1 s, still
    /// far below the 13.8 s stall the bounds prevent.
    static var pingBound: Duration {
        let optimized = (try? RunneldBinary.path())?.contains("/release/") ?? false
        return optimized ? .milliseconds(100) : .seconds(1)
    }

    @Test(.timeLimit(.minutes(2)))
    func tenThousandDistinctMapsOnOneValueDoNotStallTheLoop() throws {
        let server = try RunneldProcess()
        // Subscribed before the attacker, so each value reaches it before any bound does.
        let early = try server.connect()
        try early.subscribe("stall", sid: "e", ops: [["op": "map", "expr": "len(.)"]])
        let attacker = try server.connect()
        let count = 10_000
        try attacker.sendRaw(
            (0..<count).map {
                #"{"op":"sub","subject":"stall","sid":"a\#($0)","ops":[{"op":"map","expr":"len(str(.)) + \#($0)"}]}"#
                    + "\n"
            }.joined())
        for k in 0..<count {
            let reply = try attacker.readJSON(timeout: .seconds(30))
            guard reply == ["ok": true, "sid": .string("a\(k)")] else {
                Issue.record("sub a\(k): \(reply)")
                return
            }
        }
        let plain = try server.connect()
        try plain.subscribe("stall", sid: "p")

        let pingLog = PingLog()
        let stop = Flag()
        let pinger = Unchecked(try server.connect())
        let findings = Findings()
        let pinging = Thread {
            var ref = 0
            while !stop.isRaised {
                ref += 1
                let sent = ContinuousClock.now
                do {
                    try pinger.value.send(#"{"op":"ping","ref":\#(ref)}"#)
                    let reply = try pinger.value.readJSON(timeout: .seconds(30))
                    if reply != ["ok": true, "ref": .number(Double(ref))] { findings.add("ping \(ref): \(reply)") }
                } catch {
                    findings.add("ping \(ref): \(error)")
                    break
                }
                pingLog.record(ContinuousClock.now - sent)
                pollPause(.milliseconds(2))
            }
        }
        pinging.start()
        defer { stop.set() }

        let publisher = try server.connect()
        let value = "\"" + String(repeating: "x", count: 1_000_000) + "\""
        var live = Set((0..<count).map { "a\($0)" })
        var ended = 0
        var publishes = 0
        // Three values: the first ends the subscriptions it reaches past `max_publish_eval_ms`;
        // the few it reached before cost less than the connection's budget, and keep receiving
        // as the next values show (the budget is a rate, not a ban).
        while publishes < 3 {
            publishes += 1
            try publisher.send(#"{"op":"pub","subject":"stall","ref":\#(publishes),"value":"# + value + "}")
            #expect(try publisher.readJSON(timeout: .seconds(30))["ok"] == true)
            for _ in 0..<live.count {
                let event = try attacker.readJSON(timeout: .seconds(30))
                guard case .string(let sid)? = event["sid"], live.contains(sid) else {
                    Issue.record("unexpected event \(event)")
                    return
                }
                if event["ev"] == "next" { continue }
                #expect(event == ["ev": "error", "sid": .string(sid), "code": "eval", "message": "limit", "stage": 0])
                live.remove(sid)
                ended += 1
            }
            #expect(try early.readJSON() == ["ev": "next", "sid": "e", "value": 1_000_000])
            #expect(plain.readLine(timeout: .seconds(30))?.count == 1_000_000 + 34)
        }
        stop.set()
        while !pinging.isFinished { pollPause(.milliseconds(5)) }
        for finding in findings.all { Issue.record("\(finding)") }

        // `len(str(.))` of 1 MB costs 62,500 steps: a burst of 2,000,000 affords 32 of them.
        #expect(live.count <= 32, "\(live.count) attacker subscriptions still live")
        #expect(ended == count - live.count)
        let stats = try publisher.stats()
        #expect(stats["subscriptions"] == .number(Double(2 + live.count)))
        let refused = ["connection", "token", "publish"].reduce(0) { $0 + (stats["eval_refused"]?[$1]?.int ?? 0) }
        #expect(refused == ended)
        let (pings, worst) = pingLog.summary
        print(
            "hostile: 10,000 distinct maps on 1 MB values: \(ended) ended, \(live.count) left, \(pings) pings, "
                + "worst \(worst), bound \(Self.pingBound), eval_refused \(stats["eval_refused"]?.text ?? "-")")
        #expect(pings > 0)
        #expect(worst < Self.pingBound, "a ping waited \(worst)")
    }
}

extension HostileClientTests {
    /// A durable subject's value is delivered once it is on disk: with `fsync = "always"`, in
    /// the callback that reports the commit, not in the `pub`. Its fan-out is held to
    /// `max_publish_eval_ms` there too.
    @Test(.timeLimit(.minutes(1)))
    func aDurableSubjectsFanOutIsBoundedOnceOnDisk() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("runnel-data-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        var config = RunneldConfig()
        config.dataDir = data.path
        config.fsync = "always"
        config.maxPublishEvalMs = 1
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "dur", "kind": "replay", "capacity": 1, "durable": true])
        // 300 evaluations of 12,500 steps each (`str` of 200,000 bytes): far more than 1 ms.
        let count = 300
        try client.sendRaw(
            (0..<count).map {
                #"{"op":"sub","subject":"dur","sid":"d\#($0)","ops":[{"op":"map","expr":"len(str(.)) + \#($0)"}]}"#
                    + "\n"
            }.joined())
        for _ in 0..<count { #expect(try client.readJSON()["ok"] == true) }
        let publisher = try server.connect()
        let value = "\"" + String(repeating: "y", count: 200_000) + "\""
        try publisher.send(#"{"op":"pub","subject":"dur","ref":1,"value":"# + value + "}")
        #expect(try publisher.readJSON(timeout: .seconds(30))["ok"] == true)
        var ended = 0
        for _ in 0..<count {
            let event = try client.readJSON(timeout: .seconds(30))
            guard event["ev"] == "error" else { continue }
            #expect(event["code"] == "eval" && event["message"] == "limit" && event["stage"] == 0, "\(event)")
            ended += 1
        }
        #expect(ended > 0 && ended < count)
        #expect(
            try publisher.stats()["eval_refused"] == ["connection": 0, "token": 0, "publish": .number(Double(ended))])
    }
}

/// How many pings were answered and the longest any waited; written by the pinging thread.
final class PingLog: Sendable {
    private let state = Mutex((count: 0, worst: Duration.zero))

    func record(_ waited: Duration) {
        state.withLock { state in
            state.count += 1
            state.worst = max(state.worst, waited)
        }
    }

    var summary: (count: Int, worst: Duration) { state.withLock { $0 } }
}
