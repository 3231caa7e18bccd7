import Foundation
import RunnelTestSupport
import Testing

/// `max_eval_steps` and `max_eval_bytes` through a real daemon: one evaluation that would stall
/// the loop for seconds and take gigabytes ends its own subscription with `eval` / "limit", and
/// the server goes on serving everyone else.
@Suite struct EvalBudgetTests {
    /// About 900 KB of JSON: 130,000 six-digit numbers.
    static let bigArray = "[" + (100_000..<230_000).map(String.init).joined(separator: ",") + "]"
    /// Under 4 KiB; without a budget it builds 100 arrays of 910,000 items each (about 1.4 GB)
    /// and takes seconds.
    static let blowUp = "[" + Array(repeating: "(. + . + . + . + . + . + .)", count: 100).joined(separator: ", ") + "]"

    @Test func aPathologicalEvaluationEndsWithLimitAndOthersAreServed() throws {
        let server = try RunneldProcess()
        // The pathological evaluation comes first and may take longer than
        // `max_publish_eval_ms` by itself; `normal`'s cheap one, reached after it, still runs:
        // past the bound only connections that spent the publish's average are refused.
        let victim = try server.connect()
        try victim.subscribe("eb", sid: "v", ops: [["op": "map", "expr": .string(Self.blowUp)]])
        let normal = try server.connect()
        try normal.subscribe("eb", sid: "n", ops: [["op": "map", "expr": "len(.) + .[0]"]])
        let bystander = try server.connect()
        try bystander.subscribe("eb.other", sid: "o")

        let publisher = try server.connect()
        let started = ContinuousClock.now
        try publisher.send(#"{"op":"pub","subject":"eb","value":"# + Self.bigArray + #","ref":1}"#)
        // A generous sanity bound: the budget stops it in milliseconds; without one it takes
        // many seconds.
        let error = try victim.readJSON(timeout: .seconds(20))
        #expect(error == ["ev": "error", "sid": "v", "code": "eval", "message": "limit", "stage": 0])
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(try publisher.readJSON() == ["ok": true, "ref": 1, "receivers": 2])
        // The subscription with an ordinary expression on the same value is unaffected.
        #expect(try normal.readJSON() == ["ev": "next", "sid": "n", "value": 230_000])

        // The loop is free: another connection publishes and its subscriber receives.
        #expect(try publisher.publish("eb.other", 7) == 1)
        #expect(try bystander.readJSON() == ["ev": "next", "sid": "o", "value": 7])
        // The failed subscription is over: its sid is free again.
        try victim.subscribe("eb", sid: "v")
        if let resident = ResidentMemory.bytes(of: server.pid) {
            #expect(resident < 512 * 1024 * 1024, "resident memory \(resident) bytes")
        }
    }

    @Test func sighupChangesTheBudgetForNewSubscriptions() throws {
        var config = RunneldConfig()
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        let publisher = try server.connect()
        let value = "[" + (0..<2000).map(String.init).joined(separator: ",") + "]"
        let ops: JSON = [["op": "map", "expr": "len(str(.))"]]
        try client.subscribe("er", sid: "before", ops: ops)
        try publisher.send(#"{"op":"pub","subject":"er","value":"# + value + #","ref":1}"#)
        _ = try publisher.readJSON()
        #expect(try client.readJSON() == ["ev": "next", "sid": "before", "value": 8891])

        config.maxEvalSteps = 1000
        try server.rewriteConfig(config)
        server.signal(SIGHUP)
        let limited = try eventually(timeout: .seconds(5), interval: .milliseconds(50)) { () throws -> Bool? in
            let sid = "after\(Int.random(in: 0..<1_000_000))"
            try client.subscribe("er", sid: sid, ops: ops)
            try publisher.send(#"{"op":"pub","subject":"er","value":"# + value + #","ref":2}"#)
            _ = try publisher.readJSON()
            var sawLimit = false
            // The first subscription keeps the budget it was made with; the new one has 1000 steps.
            for _ in 0..<2 {
                let event = try client.readJSON()
                if event["sid"] == .string(sid) {
                    let limit: JSON = [
                        "ev": "error", "sid": .string(sid), "code": "eval", "message": "limit", "stage": 0,
                    ]
                    sawLimit = event == limit
                } else {
                    #expect(event == ["ev": "next", "sid": "before", "value": 8891])
                }
            }
            if !sawLimit { try client.expectOK(["op": "unsub", "sid": .string(sid)]) }
            return sawLimit ? true : nil
        }
        #expect(limited == true, "a subscription made after SIGHUP did not get the new max_eval_steps")
    }
}
