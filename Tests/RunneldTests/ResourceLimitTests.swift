import Foundation
import RunnelTestSupport
import Testing

/// Limits a hostile client runs into, seen on the wire: `max_connections` and the stages that
/// hold values or inner subscriptions under `max_buffer_values`.
@Suite struct ResourceLimitTests {
    @Test func connectionsPastMaxConnectionsGetAClosingLineAndTheServerGoesOn() throws {
        var config = RunneldConfig()
        config.maxConnections = 2
        let server = try RunneldProcess(config: config)
        let first = try server.connect()
        try first.barrier()
        let second = try server.connect()
        try second.barrier()

        let refused = try server.connect()
        try? refused.send(#"{"op":"ping","ref":1}"#)
        let lines = try #require(refused.readUntilClosed(), "a refused connection is closed")
        #expect(
            lines == [
                #"{"ev":"closing","code":"limit","message":"too many connections: the server is at max_connections (2); try again later"}"#
            ])

        // A slot freed is a slot for the next client.
        second.close()
        let next = try #require(try server.connectOnceAdmitted())
        try next.barrier()
        #expect(try first.stats()["connections"] == 2)
    }

    /// A client hammering a full server does not flood the log: refusals are logged at most
    /// once a second, with how many there were.
    @Test func refusalsAreLoggedAtMostOnceASecond() throws {
        var config = RunneldConfig()
        config.maxConnections = 1
        let server = try RunneldProcess(config: config)
        let holder = try server.connect()
        try holder.barrier()
        let started = ContinuousClock.now
        for _ in 0..<200 {
            let refused = try server.connect()
            #expect(refused.readUntilClosed()?.first?.contains(#""code":"limit""#) == true)
        }
        let seconds = (ContinuousClock.now - started).components.seconds
        try holder.barrier()
        let warnings = server.stderrLines.filter { $0.contains("refusing connections") }
        #expect(warnings.count >= 1 && warnings.count <= Int(seconds) + 2, "\(warnings.count) warnings")
    }

    /// `max_line_bytes` changed by a reload applies to connections opened after it; an open
    /// connection keeps the limit it started with, and its `line_too_long` says which.
    @Test func maxLineBytesChangedByAReloadAppliesToNewConnections() throws {
        var config = RunneldConfig()
        config.maxLineBytes = 1024
        let server = try RunneldProcess(config: config)
        let old = try server.connect()
        try old.barrier()
        config.maxLineBytes = 256
        try server.rewriteConfig(config)
        server.signal(SIGHUP)
        let line = #"{"op":"ping","ref":"\#(String(repeating: "x", count: 500))"}"#
        let new = try #require(
            try eventually {
                let client = try server.connect()
                let reply = try client.request(line)
                return reply["code"] == "line_too_long" ? (client, reply) : nil
            })
        #expect(new.1["message"] == "line of 522 bytes exceeds max_line_bytes (256)")
        #expect(try old.request(line)["ok"] == true)
        let longer = #"{"op":"ping","ref":"\#(String(repeating: "x", count: 1100))"}"#
        #expect(try old.request(longer)["message"] == "line of 1122 bytes exceeds max_line_bytes (1024)")
    }

    @Test func subscriptionsPastTheConnectionsLimitFailWithLimit() throws {
        var config = RunneldConfig()
        config.maxSubscriptionsPerConnection = 2
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.subscribe("a", sid: "1")
        try client.subscribe("a", sid: "2")
        try client.expectFailure(#"{"op":"sub","subject":"a","sid":"3","ref":3}"#, code: "limit", ref: 3)
        // The limit is per connection.
        let other = try server.connect()
        try other.subscribe("a", sid: "1")
    }

    @Test func subjectsPastMaxSubjectsFailWithLimit() throws {
        var config = RunneldConfig()
        config.maxSubjects = 2
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "s1", "kind": "replay"])
        #expect(try client.publish("s2", 1) == 0)
        try client.expectFailure(#"{"op":"create","subject":"s3","kind":"subject","ref":1}"#, code: "limit", ref: 1)
        try client.expectFailure(#"{"op":"pub","subject":"s3","value":1,"ref":2}"#, code: "limit", ref: 2)
        try client.expectFailure(#"{"op":"sub","subject":"s3","ref":3}"#, code: "limit", ref: 3)
        try client.expectOK(["op": "delete", "subject": "s1"])
        try client.expectOK(["op": "create", "subject": "s3", "kind": "subject"])
    }

    @Test func replayCapacityOverMaxBufferValuesIsBadRequest() throws {
        var config = RunneldConfig()
        config.maxBufferValues = 3
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.expectFailure(
            #"{"op":"create","subject":"r","kind":"replay","capacity":4,"ref":1}"#, code: "bad_request", ref: 1)
        try client.expectOK(["op": "create", "subject": "r", "kind": "replay", "capacity": 3])
    }

    @Test func delayHoldingMoreThanMaxBufferValuesEndsWithLimit() throws {
        var config = RunneldConfig()
        config.maxBufferValues = 3
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.subscribe("held", sid: "d", ops: [["op": "delay", "seconds": 3600]])
        for n in 0..<4 { try client.publishQuietly("held", .number(Double(n))) }
        #expect(try client.readJSON() == ["ev": "error", "sid": "d", "code": "eval", "message": "limit", "stage": 0])
        let stats = try client.stats()
        #expect(stats["subscriptions"] == 0 && stats["timers"] == .idleTimers, "\(stats)")
    }

    @Test func flattenMapWithMoreInnerSubscriptionsThanMaxBufferValuesEndsWithLimit() throws {
        var config = RunneldConfig()
        config.maxBufferValues = 3
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.subscribe("names", sid: "f", ops: [["op": "flattenMap", "expr": "."]])
        for n in 0..<4 { try client.publishQuietly("names", .string("inner.\(n)")) }
        #expect(try client.readJSON() == ["ev": "error", "sid": "f", "code": "eval", "message": "limit", "stage": 0])
        #expect(try client.stats()["subscriptions"] == 0)
    }

    @Test func mergeOfMoreSubjectsThanMaxBufferValuesFailsTheSub() throws {
        var config = RunneldConfig()
        config.maxBufferValues = 3
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        let names = (0..<4).map { "m\($0)" }
        try client.expectFailure(
            #"{"op":"sub","subject":"src","ops":[{"op":"merge","subjects":\#(JSON.array(names.map { .string($0) }).text)}],"ref":1}"#,
            code: "limit", ref: 1, stage: 0)
        // Nothing was looked up or created.
        #expect(try client.list().map { $0["subject"] } == ["src"])
    }
}
