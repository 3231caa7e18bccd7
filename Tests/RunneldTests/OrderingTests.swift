import RunnelTestSupport
import Testing

/// Ordering guarantees and disposal when a connection closes.
@Suite struct OrderingTests {
    @Test func noEventOfASidFollowsTheUnsubReply() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("uo.x", sid: "gone")
        try subscriber.subscribe("uo.y", sid: "kept")
        let publisher = try server.connect()
        // Events for `gone` are in flight while the unsub is handled.
        try publisher.sendRaw((0..<3000).map { #"{"op":"pub","subject":"uo.x","value":\#($0)}"# + "\n" }.joined())
        try subscriber.send(#"{"op":"unsub","sid":"gone","ref":"u"}"#)

        var seenBefore: [Int] = []
        while true {
            let line = try subscriber.readJSON()
            if line["ok"] != nil {
                #expect(line == ["ok": true, "ref": "u"])
                break
            }
            #expect(line["sid"] == "gone" && line["ev"] == "next", "\(line)")
            if let value = line["value"]?.int { seenBefore.append(value) }
        }
        #expect(seenBefore == Array(0..<seenBefore.count), "values before the unsub reply stay in order")

        try publisher.barrier()
        #expect(try publisher.publish("uo.x", "late") == 0)
        #expect(try publisher.publish("uo.y", "end") == 1)
        // Everything after the reply: only the other subscription's event.
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "kept", "value": "end"])
    }

    @Test func halfCloseGetsItsRepliesAndDisposesSubscriptionsAtOnce() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        // As `echo ... | nc -q1` does: send, then shut down the sending side.
        try client.send(#"{"op":"sub","subject":"hc.x","sid":"h","ref":1}"#)
        try client.send(#"{"op":"ping","ref":2}"#)
        client.shutdownWrite()
        #expect(try client.readJSON() == ["ok": true, "ref": 1, "sid": "h"])
        #expect(try client.readJSON() == ["ok": true, "ref": 2])
        #expect(client.readUntilClosed() == [])
        let control = try server.connect()
        #expect(try control.publish("hc.x", 42) == 0)
        #expect(try control.stats()["subscriptions"] == 0)
    }

    @Test func eachSubscriptionSeesPublishOrder() throws {
        let server = try RunneldProcess()
        let subscriber = try server.connect()
        try subscriber.subscribe("po.x", sid: "named")
        try subscriber.subscribe("po.*", sid: "pattern")
        let publisher = try server.connect()
        let count = 1000
        try publisher.sendRaw((0..<count).map { #"{"op":"pub","subject":"po.x","value":\#($0)}"# + "\n" }.joined())
        let events = try subscriber.readEvents(2 * count)
        #expect(events["named"]?.compactMap { $0["value"]?.int } == Array(0..<count))
        #expect(events["pattern"]?.compactMap { $0["value"]?.int } == Array(0..<count))
        #expect(events["pattern"]?.allSatisfy { $0["subject"] == "po.x" } == true)
    }

    @Test func closingAConnectionDisposesItsSubscriptions() throws {
        let server = try RunneldProcess()
        let control = try server.connect()
        try control.subscribe("dc.keep", sid: "k")
        let before = try control.stats()
        #expect(before["subscriptions"] == 1 && before["connections"] == 1)

        let subscriber = try server.connect()
        for index in 0..<10 { try subscriber.subscribe("dc.s\(index)", sid: "s\(index)") }
        try subscriber.subscribe("dc.>", sid: "pattern")
        let during = try control.stats()
        #expect(during["subscriptions"] == 12 && during["connections"] == 2)
        subscriber.close()

        let after = try eventually {
            let stats = try control.stats()
            return stats["subscriptions"] == 1 && stats["connections"] == 1 ? stats : nil
        }
        #expect(after != nil, "subscriptions were not disposed")
        // Subjects stay.
        #expect(try control.list(prefix: "dc.").count == 11)
        // Polled, like the counts above.
        #expect(try eventually { try control.publish("dc.s0", 1) == 0 })
    }

    @Test func subjectValuesOutliveThePublishersConnection() throws {
        let server = try RunneldProcess()
        let publisher = try server.connect()
        try publisher.expectOK(["op": "create", "subject": "ov", "kind": "replay", "capacity": 2])
        try publisher.publish("ov", 1)
        try publisher.publish("ov", 2)
        publisher.close()
        let subscriber = try server.connect()
        try subscriber.subscribe("ov", sid: "s")
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "s", "value": 1])
        #expect(try subscriber.readJSON() == ["ev": "next", "sid": "s", "value": 2])
    }

    @Test func abruptDisconnectsAreDisposedToo() throws {
        let server = try RunneldProcess()
        let control = try server.connect()
        let halfLine = try server.connect()
        try halfLine.subscribe("ab.x", sid: "h")
        try halfLine.sendRaw(#"{"op":"pub","subject":"ab.x","val"#)
        halfLine.close()
        let reset = try server.connect()
        try reset.subscribe("ab.>", sid: "r")
        reset.resetAndClose()

        let settled = try eventually {
            let stats = try control.stats()
            return stats["subscriptions"] == 0 && stats["connections"] == 1 ? true : nil
        }
        #expect(settled == true)
        #expect(try control.publish("ab.x", 1) == 0)
        #expect(try control.stats()["published"] == 1)
    }
}
