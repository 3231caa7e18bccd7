import Foundation
import RunnelTestSupport
import Testing

/// Stage chains through a real `runneld` over a socket: one test per stage group, the
/// protocol's example, run-time and compile-time errors on the wire, and disposal of chains
/// (their timers and inner subscriptions) when connections close. Time stages run on the
/// daemon's real clock with short intervals; waits are reads with deadlines, never sleeps.
@Suite struct StageIntegrationTests {
    /// Connections per round in the disposal test (which runs two rounds, and checks resident
    /// memory over the second): the acceptance figure, 2,000 (about 3.5 s);
    /// `RUNNEL_DISPOSAL_CONNECTIONS` overrides it for a run by hand.
    static let disposalConnections = 2_000

    @Test func protocolExampleFilterMapThrottle() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.send(
            #"{"op":"sub","subject":"cpu","sid":"hot","ops":[{"op":"filter","expr":".load > 0.9"},{"op":"map","expr":"{\"h\": .host, \"pct\": round(.load * 100)}"},{"op":"throttle","seconds":0.2}]}"#
        )
        #expect(try client.readJSON() == ["ok": true, "sid": "hot"])
        let publisher = try server.connect()
        try publisher.publishQuietly("cpu", ["host": "a", "load": 0.93])
        try publisher.publishQuietly("cpu", ["host": "b", "load": 0.5])
        try publisher.publishQuietly("cpu", ["host": "c", "load": 0.951])
        try publisher.barrier()
        // Throttled: only the latest passing value, once the 0.2 s have passed quietly.
        #expect(client.readLine(timeout: .seconds(3)) == #"{"ev":"next","sid":"hot","value":{"h":"c","pct":95}}"#)
        client.expectNoLine(within: .milliseconds(300))
    }

    @Test func transformStagesKeepPublishedBytes() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("tr", sid: "all", ops: [["op": "collect"]])
        try client.subscribe(
            "tr", sid: "sum",
            ops: [["op": "scan", "start": 0, "expr": "$acc + len(str(.))"], ["op": "takeLast", "count": 1]])
        try client.subscribe("tr", sid: "mat", ops: [["op": "materialize"], ["op": "take", "count": 1]])
        let publisher = try server.connect()
        try publisher.sendRaw(#"{"op":"pub","subject":"tr","value":1.50}"# + "\n")
        try publisher.sendRaw(#"{"op":"pub","subject":"tr","value":"\u00e9"}"# + "\n")
        try publisher.expectOK(["op": "complete", "subject": "tr"])
        var lines: [String] = []
        for _ in 0..<6 { lines.append(try #require(client.readLine())) }
        #expect(lines.contains(#"{"ev":"next","sid":"all","value":[1.50,"\u00e9"]}"#))
        #expect(lines.contains(#"{"ev":"next","sid":"mat","value":{"event":"next","value":1.50}}"#))
        #expect(lines.contains(#"{"ev":"next","sid":"sum","value":4}"#))
        for sid in ["all", "sum", "mat"] { #expect(lines.contains(#"{"ev":"completed","sid":"\#(sid)"}"#)) }
    }

    @Test func filterStagesAndAnEvalErrorEndOnlyTheirSubscription() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("fl", sid: "two", ops: [["op": "skip", "count": 1], ["op": "take", "count": 2]])
        try client.subscribe(
            "fl", sid: "bad", ops: [["op": "filter", "expr": ". > 0"], ["op": "map", "expr": ". + 1"]])
        let publisher = try server.connect()
        for value: JSON in [1, "x", 3, 4] { try publisher.publish("fl", value) }
        let events = try client.readEvents(5)
        #expect(
            events["two"] == [
                ["ev": "next", "sid": "two", "value": "x"], ["ev": "next", "sid": "two", "value": 3],
                ["ev": "completed", "sid": "two"],
            ])
        let bad = events["bad"] ?? []
        #expect(bad.count == 2)
        #expect(bad.first == ["ev": "next", "sid": "bad", "value": 2])
        #expect(bad.last?["ev"] == "error" && bad.last?["code"] == "eval" && bad.last?["stage"] == 0)
        // The connection goes on; the ended subscriptions are gone.
        #expect(try client.stats()["subscriptions"] == 0)
        try client.subscribe("fl", sid: "bad", ops: [["op": "ignore", "value": 1]])
        try publisher.publish("fl", 1.0)
        try publisher.publish("fl", 2)
        #expect(try client.readJSON() == ["ev": "next", "sid": "bad", "value": 2])
    }

    @Test func timeStagesRunOnTheLoop() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("tm", sid: "late", ops: [["op": "delay", "seconds": 0.05]])
        try client.subscribe("tm", sid: "win", ops: [["op": "bufferWithTime", "seconds": 0.1]])
        try client.subscribe("tm.none", sid: "out", ops: [["op": "timeout", "seconds": 0.1]])
        let publisher = try server.connect()
        try publisher.publish("tm", 1)
        try publisher.publish("tm", 2.0)
        let events = try client.readEvents(4)
        #expect(
            events["late"] == [["ev": "next", "sid": "late", "value": 1], ["ev": "next", "sid": "late", "value": 2]])
        #expect(events["win"] == [["ev": "next", "sid": "win", "value": [1, 2]]])
        #expect(
            events["out"] == [["ev": "error", "sid": "out", "code": "eval", "message": "timeout", "stage": 0]])
        #expect(try eventually { try client.stats()["timers"] == .idleTimers ? true : nil } == true)
    }

    @Test func combineStagesWithOtherSubjects() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("cb.a", sid: "latest", ops: [["op": "combineLatestWith", "subject": "cb.b"]])
        try client.subscribe("cb.a", sid: "zip", ops: [["op": "zipWith", "subject": "cb.b"]])
        try client.subscribe("cb.a", sid: "merge", ops: [["op": "merge", "subjects": ["cb.b"]]])
        try client.subscribe("cb.a", sid: "until", ops: [["op": "takeUntil", "subject": "cb.stop"]])
        let publisher = try server.connect()
        try publisher.sendRaw(#"{"op":"pub","subject":"cb.a","value":1.0,"ref":1}"# + "\n")
        _ = try publisher.readJSON()
        try publisher.sendRaw(#"{"op":"pub","subject":"cb.b","value":"x","ref":2}"# + "\n")
        _ = try publisher.readJSON()
        try publisher.publish("cb.stop", true)
        var lines: [String] = []
        for _ in 0..<6 { lines.append(try #require(client.readLine())) }
        #expect(lines.contains(#"{"ev":"next","sid":"latest","value":[1.0,"x"]}"#))
        #expect(lines.contains(#"{"ev":"next","sid":"zip","value":[1.0,"x"]}"#))
        #expect(lines.contains(#"{"ev":"next","sid":"merge","value":1.0}"#))
        #expect(lines.contains(#"{"ev":"next","sid":"merge","value":"x"}"#))
        #expect(lines.contains(#"{"ev":"next","sid":"until","value":1.0}"#))
        #expect(lines.contains(#"{"ev":"completed","sid":"until"}"#))
    }

    @Test func higherOrderStagesFollowNamedSubjects() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("ho.rooms", sid: "flat", ops: [["op": "flattenMap", "expr": "\"ho.room.\" + ."]])
        try client.subscribe("ho.rooms", sid: "sw", ops: [["op": "switchToLatest", "expr": "\"ho.room.\" + ."]])
        let publisher = try server.connect()
        try publisher.publish("ho.rooms", "a")
        try publisher.publish("ho.room.a", 1)
        try publisher.publish("ho.rooms", "b")
        try publisher.publish("ho.room.a", 2)
        try publisher.publish("ho.room.b", 3)
        let events = try client.readEvents(5)
        #expect(
            events["flat"]?.map { $0["value"] } == [1, 2, 3])
        #expect(events["sw"]?.map { $0["value"] } == [1, 3])
        try publisher.publish("ho.rooms", 7)
        let errors = try client.readEvents(2)
        for sid in ["flat", "sw"] {
            #expect(errors[sid]?.first?["code"] == "eval" && errors[sid]?.first?["stage"] == 0, "\(errors)")
        }
    }

    @Test func patternSubscriptionStagesSeeTheSubject() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("pa.*", sid: "p", ops: [["op": "map", "expr": "$subject + \":\" + str(.)"]])
        let publisher = try server.connect()
        try publisher.publish("pa.x", 1)
        #expect(client.readLine() == #"{"ev":"next","sid":"p","subject":"pa.x","value":"pa.x:1"}"#)
    }

    @Test func compileErrorsCarryTheStage() throws {
        let server = try RunneldProcess(config: RunneldConfig(maxStages: 2))
        let client = try server.connect()
        try client.expectFailure(
            #"{"op":"sub","subject":"ce","ops":[{"op":"take","count":1},{"op":"map","expr":". +"}],"ref":1}"#,
            code: "bad_expr", ref: 1, stage: 1)
        try client.expectFailure(
            #"{"op":"sub","subject":"ce","ops":[{"op":"throttle","seconds":-1}],"ref":2}"#, code: "bad_operator",
            ref: 2, stage: 0)
        try client.expectFailure(
            #"{"op":"sub","subject":"ce","ops":[{"op":"not"},{"op":"not"},{"op":"not"}],"ref":3}"#, code: "limit",
            ref: 3)
        #expect(try client.stats()["subscriptions"] == 0)
    }

    @Test func bufferLimitEndsTheSubscription() throws {
        let server = try RunneldProcess(config: RunneldConfig(maxBufferValues: 2))
        let client = try server.connect()
        try client.subscribe("bl", sid: "c", ops: [["op": "collect"]])
        let publisher = try server.connect()
        for value in 1...3 { try publisher.publishQuietly("bl", .number(Double(value))) }
        #expect(try client.readJSON() == ["ev": "error", "sid": "c", "code": "eval", "message": "limit", "stage": 0])
    }

    /// Connections each holding `delay`, `throttle` and `combineLatestWith` chains with armed
    /// timers and an inner subscription, all closed: nothing is left, and the daemon's resident
    /// memory ends within 20 MB of where it was. A first round of the same churn primes the
    /// allocator's pools, so the measured round compares like with like.
    @Test func closingConnectionsDisposesChainsTimersAndInnerSubscriptions() throws {
        let count =
            ProcessInfo.processInfo.environment["RUNNEL_DISPOSAL_CONNECTIONS"].flatMap(Int.init)
            ?? Self.disposalConnections
        raiseOpenFileLimit(to: rlim_t(count + 256))
        let server = try RunneldProcess()
        let publisher = try server.connect()
        try publisher.publish("dz.other", 0)
        let started = ResidentMemory.bytes(of: server.pid) ?? 0
        let warmUpOpen = try churn(count, server: server, publisher: publisher) ?? 0
        let before = try #require(ResidentMemory.bytes(of: server.pid))
        let open = try churn(count, server: server, publisher: publisher)
        let after = try #require(ResidentMemory.bytes(of: server.pid))
        print(
            "disposal: \(count) connections, runneld VmRSS in kB: \(started / 1024) at start, "
                + "\(warmUpOpen / 1024) with the warm-up round open, \(before / 1024) before the measured round, "
                + "\((open ?? 0) / 1024) with it open, \(after / 1024) after")
        #expect(after - before < 20 << 20, "VmRSS grew from \(before) to \(after) bytes")
    }

    /// Opens `count` connections with the three chains each, checks their subscriptions and
    /// timers, closes them all and waits until the server shows none left. Returns the
    /// daemon's resident bytes while they were all open.
    private func churn(_ count: Int, server: RunneldProcess, publisher: BlockingTCPClient) throws -> Int? {
        var clients: [BlockingTCPClient] = []
        for batchStart in stride(from: 0, to: count, by: 100) {
            let batch = try (batchStart..<min(batchStart + 100, count)).map { _ in try server.connect() }
            for client in batch {
                try client.send(#"{"op":"sub","subject":"dz","sid":"d","ops":[{"op":"delay","seconds":60}],"ref":1}"#)
                try client.send(
                    #"{"op":"sub","subject":"dz","sid":"t","ops":[{"op":"throttle","seconds":60}],"ref":2}"#)
                try client.send(
                    #"{"op":"sub","subject":"dz","sid":"c","ops":[{"op":"combineLatestWith","subject":"dz.other"}],"ref":3}"#
                )
            }
            for client in batch {
                for ref in 1...3 { #expect(try client.readJSON()["ok"] == true, "ref \(ref)") }
            }
            clients += batch
        }
        #expect(try publisher.publish("dz", 1) == 3 * count)
        let before = try publisher.stats()
        #expect(before["subscriptions"] == .number(Double(3 * count)))
        // One delayed value and one held throttle value per connection.
        #expect((before["timers"]?.int ?? 0) >= 2 * count, "\(before)")
        #expect(try publisher.list(prefix: "dz.other").first?["subscribers"] == 0)
        let resident = ResidentMemory.bytes(of: server.pid)

        for client in clients { client.close() }
        let drained = try eventually(timeout: .seconds(30)) { () -> JSON? in
            let stats = try publisher.stats()
            return stats["connections"] == 1 && stats["subscriptions"] == 0 && stats["timers"] == .idleTimers
                ? stats : nil
        }
        let after = try publisher.stats()
        #expect(drained != nil, "\(after)")
        // The combineLatestWith inner subscriptions are gone too: a value reaches nobody.
        #expect(try publisher.publish("dz.other", 1) == 0)
        return resident
    }
}
