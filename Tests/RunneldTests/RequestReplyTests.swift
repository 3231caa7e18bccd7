import RunnelTestSupport
import Testing

/// Every request of the protocol and the exact shape of its reply.
@Suite struct RequestReplyTests {
    @Test func pubWithoutRefGetsNoReply() throws {
        let server = try RunneldProcess()
        let publisher = try server.connect()
        try publisher.publishQuietly("quiet.a", 1)
        // The next line this connection sees is the ping's reply, not a pub reply.
        #expect(try publisher.request(#"{"op":"ping","ref":"p"}"#) == ["ok": true, "ref": "p"])
        publisher.expectNoLine(within: .milliseconds(200))
    }

    @Test func pubReplyCountsNamedAndPatternReceivers() throws {
        let server = try RunneldProcess()
        let a = try server.connect()
        let b = try server.connect()
        let publisher = try server.connect()
        try a.subscribe("rc.x.y", sid: "named")
        try a.subscribe("rc.x.*", sid: "star")
        try b.subscribe("rc.>", sid: "tail")
        try b.subscribe("rc.x.y", sid: "named")
        try b.subscribe("rc.other", sid: "other")

        #expect(
            try publisher.request(#"{"op":"pub","subject":"rc.x.y","value":1,"ref":7}"#) == [
                "ok": true, "ref": 7, "receivers": 4,
            ])
        #expect(try publisher.publish("zz.nobody", 2) == 0)
        #expect(try publisher.publish("rc.other", 3) == 2)
    }

    @Test func pubWithoutValuePublishesNull() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("nv", sid: "s")
        let publisher = try server.connect()
        #expect(
            try publisher.request(#"{"op":"pub","subject":"nv","ref":1}"#) == ["ok": true, "ref": 1, "receivers": 1])
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "s", "value": nil])
    }

    @Test func publishedValueKeepsItsExactBytes() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("raw", sid: "s")
        let publisher = try server.connect()
        let value = #"{"b":1,"a":[1.50,2e3,"\u00e9",-0.0,{}],"c":"x\ty"}"#
        try publisher.send(#"{"op":"pub","subject":"raw","value":"# + value + "}")
        let line = subscriber.readLine()
        #expect(line?.contains(#""value":"# + value) == true, "\(line ?? "nil")")
        #expect(try JSON.parse(line ?? "")["sid"] == "s")
    }

    @Test(
        arguments: [
            (#""abc""#, "abc"), ("42", 42), ("-7.25", -7.25), ("true", true), ("false", false), ("null", nil),
            (#""é \"q\"""#, "é \"q\""), ("12345678901234", 12_345_678_901_234),
        ] as [(String, JSON)])
    func refIsEchoedUnchanged(refText: String, ref: JSON) throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        #expect(try client.request(#"{"op":"ping","ref":"# + refText + "}") == ["ok": true, "ref": ref])
        // Failure replies echo it too.
        try client.expectFailure(#"{"op":"nope","ref":"# + refText + "}", code: "unknown_op", ref: ref)
        #expect(
            try client.request(#"{"ref":"# + refText + #","op":"pub","subject":"e","value":1}"#) == [
                "ok": true, "ref": ref, "receivers": 0,
            ])
    }

    @Test func replyWithoutRefHasNoRef() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        #expect(try client.request(#"{"op":"ping"}"#) == ["ok": true])
        #expect(try client.request(#"{"op":"sub","subject":"nr","sid":"x"}"#) == ["ok": true, "sid": "x"])
        try client.expectFailure(#"{"op":"unsub","sid":"nope"}"#, code: "unknown_sid", ref: nil)
    }

    @Test func subWithGivenAndServerChosenSids() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        #expect(
            try client.request(#"{"op":"sub","subject":"sids","sid":"mine","ref":1}"#) == [
                "ok": true, "ref": 1, "sid": "mine",
            ])
        let first = try client.request(#"{"op":"sub","subject":"sids","ref":2}"#)
        let second = try client.request(#"{"op":"sub","subject":"sids","ref":3}"#)
        #expect(first.keys == ["ok", "ref", "sid"] && second.keys == ["ok", "ref", "sid"])
        let chosen = [first["sid"]?.string ?? "", second["sid"]?.string ?? ""]
        #expect(!chosen[0].isEmpty && !chosen[1].isEmpty && chosen[0] != chosen[1] && !chosen.contains("mine"))

        let publisher = try server.connect()
        #expect(try publisher.publish("sids", "v") == 3)
        let events = try client.readEvents(3)
        #expect(Set(events.keys) == Set(chosen + ["mine"]))
        for (sid, list) in events { #expect(list == [["ev": "next", "sid": .string(sid), "value": "v"]]) }
    }

    @Test func unsubStopsDelivery() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("un.x", sid: "u")
        #expect(try client.request(#"{"op":"unsub","sid":"u","ref":"bye"}"#) == ["ok": true, "ref": "bye"])
        let publisher = try server.connect()
        #expect(try publisher.publish("un.x", 1) == 0)
        try client.barrier()
        // The sid is free again.
        try client.subscribe("un.x", sid: "u")
    }

    @Test func createEachKindAndNoOpWhenMatching() throws {
        var config = RunneldConfig()
        config.defaultReplayCapacity = 4
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        #expect(
            try client.request(#"{"op":"create","subject":"cr.s","kind":"subject","ref":1}"#) == ["ok": true, "ref": 1])
        #expect(
            try client.request(#"{"op":"create","subject":"cr.r","kind":"replay","capacity":2,"ref":2}"#) == [
                "ok": true, "ref": 2,
            ])
        #expect(
            try client.request(#"{"op":"create","subject":"cr.b","kind":"behavior","value":5,"ref":3}"#) == [
                "ok": true, "ref": 3,
            ])
        #expect(
            try client.request(#"{"op":"create","subject":"cr.d","kind":"replay","ref":4}"#) == ["ok": true, "ref": 4])

        // Same kind and capacity: no-op.
        try client.expectOK(["op": "create", "subject": "cr.s", "kind": "subject"])
        try client.expectOK(["op": "create", "subject": "cr.r", "kind": "replay", "capacity": 2])
        try client.expectOK(["op": "create", "subject": "cr.d", "kind": "replay", "capacity": 4])
        // A behavior's value only initialises a new subject.
        try client.expectOK(["op": "create", "subject": "cr.b", "kind": "behavior", "value": 9])
        try client.subscribe("cr.b", sid: "b")
        #expect(try client.readJSON() == ["ev": "next", "sid": "b", "value": 5])

        let capacities = try client.list(prefix: "cr.").filter { $0["kind"] == "replay" }.map { $0["capacity"] }
        #expect(capacities == [4, 2])  // cr.d, cr.r
    }

    @Test func createWithDifferentKindOrCapacityIsKindMismatch() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "km.r", "kind": "replay", "capacity": 2])
        try client.expectFailure(
            #"{"op":"create","subject":"km.r","kind":"replay","capacity":3,"ref":1}"#, code: "kind_mismatch", ref: 1)
        try client.expectFailure(
            #"{"op":"create","subject":"km.r","kind":"behavior","ref":2}"#, code: "kind_mismatch", ref: 2)
        try client.expectFailure(
            #"{"op":"create","subject":"km.r","kind":"subject","ref":3}"#, code: "kind_mismatch", ref: 3)
        // A subject created by publishing is a plain subject.
        try client.publishQuietly("km.auto", 1)
        try client.expectOK(["op": "create", "subject": "km.auto", "kind": "subject"])
        try client.expectFailure(
            #"{"op":"create","subject":"km.auto","kind":"replay","capacity":1,"ref":4}"#, code: "kind_mismatch", ref: 4)
    }

    @Test func completeSendsCompletedAndRefusesLaterPubs() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("cp.x", sid: "c")
        let control = try server.connect()
        #expect(
            try control.request(#"{"op":"complete","subject":"cp.x","ref":"done"}"#) == ["ok": true, "ref": "done"])
        #expect(try subscriber.readJSON() == ["ev": "completed", "sid": "c"])
        try control.expectFailure(#"{"op":"pub","subject":"cp.x","value":1,"ref":5}"#, code: "terminated", ref: 5)
        // A late subscriber of a plain subject gets only the terminal event, after its ok reply.
        try subscriber.subscribe("cp.x", sid: "late")
        #expect(try subscriber.readJSON() == ["ev": "completed", "sid": "late"])
    }

    @Test func errorSendsSubjectErrorToSubscribersAndLateSubscribers() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("er.x", sid: "e")
        let control = try server.connect()
        #expect(
            try control.request(#"{"op":"error","subject":"er.x","message":"boom","ref":2}"#) == ["ok": true, "ref": 2])
        #expect(try subscriber.readJSON() == ["ev": "error", "sid": "e", "code": "subject_error", "message": "boom"])
        try subscriber.subscribe("er.x", sid: "late")
        #expect(
            try subscriber.readJSON() == ["ev": "error", "sid": "late", "code": "subject_error", "message": "boom"])
        try control.expectFailure(#"{"op":"pub","subject":"er.x","ref":3}"#, code: "terminated", ref: 3)
    }

    @Test func deleteCompletesSubscriptionsAndFreesTheName() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("dl.x", sid: "named")
        try subscriber.subscribe("dl.*", sid: "pattern")
        let control = try server.connect()
        try control.expectOK(["op": "create", "subject": "dl.x", "kind": "subject"])
        #expect(try control.request(#"{"op":"delete","subject":"dl.x","ref":"d"}"#) == ["ok": true, "ref": "d"])
        #expect(try subscriber.readJSON() == ["ev": "completed", "sid": "named"])
        #expect(try control.list(prefix: "dl.").isEmpty)

        // The pattern subscription goes on, and the name can be created again with another kind;
        // the pattern joins the new behavior subject, which first sends it its current value.
        try control.expectOK(["op": "create", "subject": "dl.x", "kind": "behavior", "value": 1])
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "pattern", "subject": "dl.x", "value": 1])
        #expect(try control.publish("dl.x", 2) == 1)
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "pattern", "subject": "dl.x", "value": 2])
        try control.expectFailure(#"{"op":"delete","subject":"dl.never","ref":1}"#, code: "unknown_subject", ref: 1)
    }

    @Test func listReportsSubjectsWithCounts() throws {
        let server = try RunneldProcess()
        let control = try server.connect()
        try control.expectOK(["op": "create", "subject": "lst.r", "kind": "replay", "capacity": 3])
        try control.expectOK(["op": "create", "subject": "lst.b", "kind": "behavior", "value": 7])
        try control.expectOK(["op": "create", "subject": "lst.s", "kind": "subject"])
        try control.expectOK(["op": "create", "subject": "lstx", "kind": "subject"])
        try control.expectOK(["op": "create", "subject": "zzz", "kind": "subject"])
        let subscriber = try server.connect()
        try subscriber.subscribe("lst.r", sid: "r1")
        try subscriber.subscribe("lst.r", sid: "r2")
        try subscriber.subscribe("lst.s", sid: "s1")
        try subscriber.subscribe("lst.>", sid: "pattern")
        try control.publish("lst.r", 1)
        try control.publish("lst.r", 2)
        try control.publish("lst.s", 3)
        try control.expectOK(["op": "complete", "subject": "lst.b"])

        // capacity belongs to replay subjects; ignore it elsewhere. A position's epoch is the
        // server's choice: only its seq is compared.
        let entries = try control.list(prefix: "lst.").map { entry -> JSON in
            guard var members = entry.object else { return entry }
            if members["kind"] != "replay" { members["capacity"] = nil }
            members["pos"] = members["pos"]?.string.flatMap { $0.split(separator: ":").last }.map {
                .string(String($0))
            }
            return .object(members)
        }
        #expect(
            entries == [
                [
                    "subject": "lst.b", "kind": "behavior", "subscribers": 0, "published": 0, "terminated": true,
                    "pos": "0", "durable": false,
                ],
                [
                    "subject": "lst.r", "kind": "replay", "capacity": 3, "subscribers": 2, "published": 2,
                    "terminated": false, "pos": "2", "durable": false,
                ],
                [
                    "subject": "lst.s", "kind": "subject", "subscribers": 1, "published": 1, "terminated": false,
                    "pos": "1", "durable": false,
                ],
            ])
        // The pattern subscription created nothing.
        #expect(try control.list().compactMap { $0["subject"]?.string } == ["lst.b", "lst.r", "lst.s", "lstx", "zzz"])
    }

    @Test func statsReportsEveryFieldSensibly() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("st.x", sid: "named")
        try subscriber.subscribe("st.>", sid: "pattern")
        let control = try server.connect()
        try control.expectOK(["op": "create", "subject": "st.y", "kind": "replay", "capacity": 1])
        for value in 1...3 { #expect(try control.publish("st.x", .number(Double(value))) == 2) }
        let events = try subscriber.readEvents(6)
        #expect(events["named"]?.count == 3 && events["pattern"]?.count == 3)

        let stats = try control.stats()
        let fields: Set<String> = [
            "connections", "subscriptions", "subjects", "timers", "published", "delivered", "dropped", "bytes_in",
            "bytes_out", "uptime_s",
        ]
        #expect(fields.isSubset(of: stats.keys), "\(stats)")
        for field in fields { #expect(stats[field]?.double.map { $0 >= 0 } == true, "\(field): \(stats)") }
        #expect(stats["connections"] == 2)
        #expect(stats["subscriptions"] == 2)
        #expect(stats["subjects"] == 2)
        #expect(stats["timers"] == .idleTimers)
        #expect(stats["published"] == 3)
        #expect(stats["delivered"] == 6)
        #expect(stats["dropped"] == 0)
        #expect((stats["bytes_in"]?.int ?? 0) >= 200)
        #expect((stats["bytes_out"]?.int ?? 0) >= 200)
        // The loop's turn lengths (an extension): the turns so far, quantiles no longer than
        // the longest turn.
        let loop = try #require(stats["loop"]?.object, "\(stats)")
        #expect(Set(loop.keys) == ["turns", "turn_p50_us", "turn_p99_us", "turn_max_us"])
        let turns = loop.compactMapValues(\.int)
        #expect((turns["turns"] ?? 0) > 0)
        #expect((turns["turn_p50_us"] ?? .max) <= (turns["turn_p99_us"] ?? 0))
        #expect((turns["turn_p99_us"] ?? .max) <= (turns["turn_max_us"] ?? 0))
    }

    /// `delivered` and `bytes_out` are exact, whichever way a `next` line is written: a small
    /// published value copied whole, a computed one, a large one (over 4 KiB) queued by
    /// reference, and a pattern subscription's line that names the subject.
    @Test func statsCountEveryDeliveryAndEveryByteWritten() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        let control = try server.connect()
        var written = 0
        func readCounted(_ client: BlockingTCPClient) throws -> JSON {
            guard let line = client.readLine() else { throw HarnessError.timeout("no line") }
            written += line.utf8.count + 1
            return try JSON.parse(line)
        }
        for request in [
            #"{"op":"sub","subject":"sb.x","sid":"plain"}"#,
            #"{"op":"sub","subject":"sb.x","sid":"mapped","ops":[{"op":"map","expr":"[.]"}]}"#,
            #"{"op":"sub","subject":"sb.>","sid":"pattern"}"#,
        ] {
            try subscriber.send(request)
            #expect(try readCounted(subscriber)["ok"] == true)
        }
        let large = String(repeating: "y", count: 6000)
        for value in ["1", #""small""#, "\"\(large)\""] {
            try control.send(#"{"op":"pub","subject":"sb.x","value":"# + value + "}")
        }
        var events: [String: Int] = [:]
        for _ in 0..<9 {
            let event = try readCounted(subscriber)
            events[event["sid"]?.string ?? "?", default: 0] += 1
        }
        #expect(events == ["plain": 3, "mapped": 3, "pattern": 3])

        // The stats reply's own bytes are counted after it is composed.
        let stats = try control.request(#"{"op":"stats"}"#)
        #expect(stats["published"] == 3)
        #expect(stats["delivered"] == 9)
        #expect(stats["bytes_out"]?.int == written, "\(stats)")
    }

    @Test func pingRepliesOk() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        #expect(try client.request(#"{"op":"ping","ref":"x"}"#) == ["ok": true, "ref": "x"])
    }

    @Test func requestsOfOneConnectionAreAnsweredInOrder() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.sendRaw((0..<200).map { #"{"op":"ping","ref":\#($0)}"# + "\n" }.joined())
        for ref in 0..<200 { #expect(try client.readJSON() == ["ok": true, "ref": .number(Double(ref))]) }
    }
}
