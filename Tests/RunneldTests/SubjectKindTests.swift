import Testing

/// What `subject`, `replay` and `behavior` deliver to early and late subscribers.
@Suite struct SubjectKindTests {
    @Test func replayDeliversLastValuesThenTerminalToLateSubscribers() throws {
        let server = try RunneldProcess()
        let control = try server.connect()
        try control.expectOK(["op": "create", "subject": "rp", "kind": "replay", "capacity": 3])
        for value in 1...5 { try control.publishQuietly("rp", .number(Double(value))) }
        try control.barrier()

        let subscriber = try server.connect()
        // The ok reply comes before any replayed event.
        #expect(
            try subscriber.request(#"{"op":"sub","subject":"rp","sid":"r1","ref":"s"}"#) == [
                "ok": true, "ref": "s", "sid": "r1",
            ])
        for value in 3...5 {
            #expect(try subscriber.readJSON() == ["ev": "next", "sid": "r1", "value": .number(Double(value))])
        }
        #expect(try control.publish("rp", 6) == 1)
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "r1", "value": 6])
        try control.expectOK(["op": "complete", "subject": "rp"])
        #expect(try subscriber.readJSON() == ["ev": "completed", "sid": "r1"])

        try subscriber.subscribe("rp", sid: "late")
        for value in 4...6 {
            #expect(try subscriber.readJSON() == ["ev": "next", "sid": "late", "value": .number(Double(value))])
        }
        #expect(try subscriber.readJSON() == ["ev": "completed", "sid": "late"])
    }

    @Test func replayUsesTheConfiguredDefaultCapacity() throws {
        var config = RunneldConfig()
        config.defaultReplayCapacity = 2
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "rd", "kind": "replay"])
        for value in ["a", "b", "c", "d"] { try client.publish("rd", .string(value)) }
        try client.subscribe("rd", sid: "s")
        #expect(try client.readJSON() == ["ev": "next", "sid": "s", "value": "c"])
        #expect(try client.readJSON() == ["ev": "next", "sid": "s", "value": "d"])
        #expect(try client.list(prefix: "rd").first?["capacity"] == 2)
    }

    @Test func replayedValuesKeepTheirBytesAndErrorFollowsThem() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "rx", "kind": "replay", "capacity": 2])
        try client.send(#"{"op":"pub","subject":"rx","value":{"z":1.50,"a":[]}}"#)
        try client.expectOK(["op": "error", "subject": "rx", "message": "sensor failed"])
        try client.subscribe("rx", sid: "s")
        let line = client.readLine() ?? ""
        #expect(line.contains(#""value":{"z":1.50,"a":[]}"#), "\(line)")
        #expect(
            try client.readJSON() == ["ev": "error", "sid": "s", "code": "subject_error", "message": "sensor failed"])
    }

    @Test func behaviorDeliversInitialThenCurrentValue() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "bh", "kind": "behavior", "value": ["v": 0]])
        #expect(
            try client.request(#"{"op":"sub","subject":"bh","sid":"b1","ref":1}"#) == [
                "ok": true, "ref": 1, "sid": "b1",
            ])
        #expect(try client.readJSON() == ["ev": "next", "sid": "b1", "value": ["v": 0]])

        let publisher = try server.connect()
        #expect(try publisher.publish("bh", 1) == 1)
        #expect(try client.readJSON() == ["ev": "next", "sid": "b1", "value": 1])
        try client.subscribe("bh", sid: "b2")
        #expect(try client.readJSON() == ["ev": "next", "sid": "b2", "value": 1])

        try publisher.expectOK(["op": "complete", "subject": "bh"])
        let ends = try client.readEvents(2)
        #expect(ends["b1"] == [["ev": "completed", "sid": "b1"]] && ends["b2"] == [["ev": "completed", "sid": "b2"]])
        // After completion a late subscriber gets the last value, then completed.
        try client.subscribe("bh", sid: "b3")
        #expect(try client.readJSON() == ["ev": "next", "sid": "b3", "value": 1])
        #expect(try client.readJSON() == ["ev": "completed", "sid": "b3"])
    }

    @Test func behaviorWithoutValueStartsWithNull() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "bn", "kind": "behavior"])
        try client.subscribe("bn", sid: "s")
        #expect(try client.readJSON() == ["ev": "next", "sid": "s", "value": nil])
    }

    @Test func plainSubjectDeliversOnlyLaterValues() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        let publisher = try server.connect()
        #expect(try publisher.publish("pl", "before") == 0)
        try client.subscribe("pl", sid: "s")
        #expect(try publisher.publish("pl", "after") == 1)
        #expect(try client.readJSON() == ["ev": "next", "sid": "s", "value": "after"])
        #expect(try client.list(prefix: "pl").first?["kind"] == "subject")
    }

    @Test func subscribingAutoCreatesAPlainSubject() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("auto.sub", sid: "s")
        let entries = try client.list()
        #expect(entries.count == 1)
        #expect(entries.first?["kind"] == "subject" && entries.first?["subscribers"] == 1)
    }
}
