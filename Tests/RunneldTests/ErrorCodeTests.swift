import Testing

/// Every error code that needs no stage to reach, and that the connection stays usable after it.
@Suite struct ErrorCodeTests {
    @Test func badJSONKeepsTheConnectionUsable() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        let lines: [[UInt8]] = [
            Array("garbage".utf8),
            Array("[1,2,3]".utf8),
            Array(#""just a string""#.utf8),
            Array("42".utf8),
            Array(#"{"op":"ping","ref":1"#.utf8),
            Array(#"{"op":"ping",}"#.utf8),
            Array(#"{"op":"ping","ref":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8),
            Array(#"{"op":"ping"} trailing"#.utf8),
        ]
        for line in lines {
            try client.sendRaw(line + [0x0A])
            let reply = try client.readJSON()
            expectError(reply, code: "bad_json", ref: nil, checkRef: false)
            #expect(try client.request(#"{"op":"ping","ref":"after"}"#) == ["ok": true, "ref": "after"])
        }
    }

    @Test(arguments: [
        #"{"ref":1}"#,
        #"{"op":5,"ref":1}"#,
        #"{"op":"pub","ref":1}"#,
        #"{"op":"pub","subject":7,"ref":1}"#,
        #"{"op":"sub","ref":1}"#,
        #"{"op":"sub","subject":"br","sid":7,"ref":1}"#,
        #"{"op":"sub","subject":"br","ops":{"op":"take","count":1},"ref":1}"#,
        #"{"op":"unsub","ref":1}"#,
        #"{"op":"unsub","sid":["x"],"ref":1}"#,
        #"{"op":"create","subject":"br","ref":1}"#,
        #"{"op":"create","subject":"br","kind":"queue","ref":1}"#,
        #"{"op":"create","subject":"br","kind":"replay","capacity":-1,"ref":1}"#,
        #"{"op":"create","subject":"br","kind":"replay","capacity":"3","ref":1}"#,
        #"{"op":"complete","ref":1}"#,
        #"{"op":"error","subject":"br","ref":1}"#,
        #"{"op":"error","subject":"br","message":5,"ref":1}"#,
        #"{"op":"delete","ref":1}"#,
        #"{"op":"list","prefix":5,"ref":1}"#,
    ])
    func malformedRequestIsBadRequest(line: String) throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.expectFailure(line, code: "bad_request", ref: 1)
        try client.barrier()
    }

    @Test(arguments: [
        "a..b", "a*", "*a", "a.b*", ".a", "a.", "", "a b", "a\tb", "a\u{01}b", "a>", "a.>.b", ">.a",
        String(repeating: "x", count: 256), String(repeating: "abc.", count: 64),
    ])
    func badSubjectNameIsBadRequest(name: String) throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        let subject = JSON.string(name)
        expectError(
            try client.request(["op": "pub", "subject": subject, "value": 1, "ref": 1]), code: "bad_request", ref: 1)
        expectError(try client.request(["op": "sub", "subject": subject, "ref": 2]), code: "bad_request", ref: 2)
        expectError(
            try client.request(["op": "create", "subject": subject, "kind": "subject", "ref": 3]), code: "bad_request",
            ref: 3)
        #expect(try client.list().isEmpty)
    }

    @Test(arguments: ["*", ">", "a.*", "a.>", "*.b"])
    func patternIsNotAPublishTarget(pattern: String) throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        let subject = JSON.string(pattern)
        expectError(
            try client.request(["op": "pub", "subject": subject, "value": 1, "ref": 1]), code: "bad_request", ref: 1)
        expectError(
            try client.request(["op": "create", "subject": subject, "kind": "subject", "ref": 2]), code: "bad_request",
            ref: 2)
    }

    @Test func longestAndUnusualValidNamesWork() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        let longest = String(repeating: "abcd.", count: 50) + "abcde"
        #expect(longest.utf8.count == 255)
        #expect(try client.publish(longest, 1) == 0)
        #expect(try client.publish("température.café.温度", 1) == 0)
        #expect(try client.publish("a-b_c:d/e", 1) == 0)
    }

    @Test func unknownOp() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.expectFailure(#"{"op":"frob","ref":3.5}"#, code: "unknown_op", ref: 3.5)
        try client.barrier()
    }

    @Test func unknownSubjectWhenAutoCreateIsOff() throws {
        var config = RunneldConfig()
        config.autoCreate = false
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.expectFailure(#"{"op":"pub","subject":"uk.x","value":1,"ref":1}"#, code: "unknown_subject", ref: 1)
        // A pub without ref still gets its failure reply, without ref.
        try client.expectFailure(#"{"op":"pub","subject":"uk.x","value":1}"#, code: "unknown_subject", ref: nil)
        try client.expectFailure(#"{"op":"sub","subject":"uk.x","sid":"s","ref":2}"#, code: "unknown_subject", ref: 2)
        try client.expectFailure(#"{"op":"complete","subject":"uk.x","ref":3}"#, code: "unknown_subject", ref: 3)
        #expect(try client.list().isEmpty)

        // Patterns create nothing, so they are allowed, and see subjects created later.
        try client.subscribe("uk.*", sid: "p")
        try client.expectOK(["op": "create", "subject": "uk.x", "kind": "subject"])
        try client.subscribe("uk.x", sid: "s")
        let publisher = try server.connect()
        #expect(try publisher.publish("uk.x", 1) == 2)
        let events = try client.readEvents(2)
        #expect(events["p"] == [["ev": "next", "sid": "p", "subject": "uk.x", "value": 1]])
        #expect(events["s"] == [["ev": "next", "sid": "s", "value": 1]])
    }

    @Test func terminatedSubjectRefusesPubs() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "tm", "kind": "replay", "capacity": 1])
        try client.expectOK(["op": "complete", "subject": "tm"])
        try client.expectFailure(#"{"op":"pub","subject":"tm","value":1,"ref":1}"#, code: "terminated", ref: 1)
        try client.expectFailure(#"{"op":"pub","subject":"tm","value":1}"#, code: "terminated", ref: nil)
    }

    @Test func duplicateSidOnOneConnection() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("dup.a", sid: "d")
        try client.expectFailure(#"{"op":"sub","subject":"dup.b","sid":"d","ref":1}"#, code: "duplicate_sid", ref: 1)
        try client.expectFailure(#"{"op":"sub","subject":"dup.*","sid":"d","ref":2}"#, code: "duplicate_sid", ref: 2)
        // Sids belong to their connection.
        let other = try server.connect()
        try other.subscribe("dup.b", sid: "d")
        #expect(try other.publish("dup.a", 1) == 1)
        #expect(try client.readJSON() == ["ev": "next", "sid": "d", "value": 1])
    }

    @Test func unknownSid() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.expectFailure(#"{"op":"unsub","sid":"nope","ref":1}"#, code: "unknown_sid", ref: 1)
        try client.subscribe("us", sid: "once")
        try client.expectOK(["op": "unsub", "sid": "once"])
        try client.expectFailure(#"{"op":"unsub","sid":"once","ref":2}"#, code: "unknown_sid", ref: 2)
    }

    @Test func lineTooLongIsDiscardedAndTheConnectionGoesOn() throws {
        var config = RunneldConfig()
        config.maxLineBytes = 1024
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        let long = #"{"op":"pub","subject":"ll","ref":1,"value":""# + String(repeating: "x", count: 5000) + #""}"#
        try client.sendRaw(long + "\n" + #"{"op":"ping","ref":2}"# + "\n")
        expectError(try client.readJSON(), code: "line_too_long", ref: nil, checkRef: false)
        #expect(try client.readJSON() == ["ok": true, "ref": 2])

        // Much longer than any buffer, arriving in pieces.
        let chunk = String(repeating: "y", count: 65_536)
        try client.sendRaw(#"{"op":"pub","subject":"ll","value":""#)
        for _ in 0..<48 { try client.sendRaw(chunk) }
        try client.sendRaw("\"}\n")
        expectError(try client.readJSON(), code: "line_too_long", ref: nil, checkRef: false)
        #expect(try client.request(#"{"op":"ping","ref":3}"#) == ["ok": true, "ref": 3])
        // Neither discarded pub was executed.
        #expect(try client.stats()["published"] == 0)
    }

    @Test func unknownStageIsBadOperatorWithItsIndex() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.expectFailure(
            #"{"op":"sub","subject":"bo","sid":"b","ops":[{"op":"frobnicate"}],"ref":1}"#, code: "bad_operator", ref: 1,
            stage: 0)
        try client.expectFailure(
            #"{"op":"sub","subject":"bo","sid":"b","ops":[{"op":"take","count":1},{"op":"frobnicate"}],"ref":2}"#,
            code: "bad_operator", ref: 2, stage: 1)
        // Nothing was subscribed: the sid is free and no subscription exists.
        #expect(try client.stats()["subscriptions"] == 0)
        try client.subscribe("bo", sid: "b", ops: [])
        #expect(try server.connect().publish("bo", 1) == 1)
        #expect(try client.readJSON() == ["ev": "next", "sid": "b", "value": 1])
    }
}
