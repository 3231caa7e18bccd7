import Testing

/// Pattern subscriptions: `*` and `>`, future subjects, `subject` in events, no termination.
@Suite struct PatternTests {
    @Test func wildcardsMatchWholeTokens() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("pt.*", sid: "star")
        try subscriber.subscribe("pt.>", sid: "tail")
        try subscriber.subscribe("pt.*.temp", sid: "mid")
        let publisher = try server.connect()
        #expect(try publisher.publish("pt.a", 1) == 2)  // star, tail
        #expect(try publisher.publish("pt.a.temp", 2) == 2)  // tail, mid
        #expect(try publisher.publish("pt", 3) == 0)  // `>` needs at least one token
        #expect(try publisher.publish("pt.a.b.c", 4) == 1)  // tail
        #expect(try publisher.publish("pta.b", 5) == 0)
        #expect(try publisher.publish("xx.pt.a", 6) == 0)

        let events = try subscriber.readEvents(5)
        #expect(events["star"] == [["ev": "next", "sid": "star", "subject": "pt.a", "value": 1]])
        #expect(
            events["tail"] == [
                ["ev": "next", "sid": "tail", "subject": "pt.a", "value": 1],
                ["ev": "next", "sid": "tail", "subject": "pt.a.temp", "value": 2],
                ["ev": "next", "sid": "tail", "subject": "pt.a.b.c", "value": 4],
            ])
        #expect(events["mid"] == [["ev": "next", "sid": "mid", "subject": "pt.a.temp", "value": 2]])
    }

    @Test func loneGreaterThanMatchesEverything() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe(">", sid: "all")
        try client.subscribe("*", sid: "one")
        let publisher = try server.connect()
        #expect(try publisher.publish("x", 1) == 2)
        #expect(try publisher.publish("x.y", 2) == 1)
        let events = try client.readEvents(3)
        #expect(
            events["all"] == [
                ["ev": "next", "sid": "all", "subject": "x", "value": 1],
                ["ev": "next", "sid": "all", "subject": "x.y", "value": 2],
            ])
        #expect(events["one"] == [["ev": "next", "sid": "one", "subject": "x", "value": 1]])
    }

    @Test func subjectsCreatedLaterJoin() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("later.*", sid: "p")
        let control = try server.connect()
        try control.expectOK(["op": "create", "subject": "later.replay", "kind": "replay", "capacity": 5])
        try control.expectOK(["op": "create", "subject": "later.plain", "kind": "subject"])
        #expect(try control.publish("later.replay", "r") == 1)
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "p", "subject": "later.replay", "value": "r"])
        #expect(try control.publish("later.plain", "b") == 1)
        #expect(try control.publish("later.auto", "a") == 1)
        let events = try subscriber.readEvents(2)["p"] ?? []
        #expect(events.last == ["ev": "next", "sid": "p", "subject": "later.auto", "value": "a"])
        #expect(events.first == ["ev": "next", "sid": "p", "subject": "later.plain", "value": "b"])
    }

    @Test func terminationOfAMatchingSubjectDoesNotEndThePattern() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("tp.*", sid: "p")
        let control = try server.connect()
        #expect(try control.publish("tp.a", 1) == 1)
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "p", "subject": "tp.a", "value": 1])
        try control.expectOK(["op": "complete", "subject": "tp.a"])
        try control.expectOK(["op": "create", "subject": "tp.b", "kind": "replay", "capacity": 1])
        try control.expectOK(["op": "error", "subject": "tp.b", "message": "x"])
        try control.expectOK(["op": "create", "subject": "tp.c", "kind": "subject"])
        try control.expectOK(["op": "delete", "subject": "tp.c"])
        // The very next line is the next value of another subject: no terminal event came first.
        #expect(try control.publish("tp.d", 2) == 1)
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "p", "subject": "tp.d", "value": 2])
        #expect(try control.stats()["subscriptions"] == 1)
    }
}
