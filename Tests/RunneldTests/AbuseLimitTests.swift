import Foundation
import RunnelTestSupport
import Testing

/// The limits that keep one client from holding what others need, seen on the wire:
/// `login_timeout`, `max_connections_per_address`, `max_subscription_bytes`, and the bytes
/// subjects retain (`max_replay_bytes`, `max_retained_bytes`).
@Suite struct AbuseLimitTests {
    /// A connection that sends nothing is closed at `login_timeout` with a `closing` line
    /// saying why; one that has sent a request stays.
    @Test func aSilentConnectionIsClosedAtTheLoginTimeout() throws {
        var config = RunneldConfig()
        config.loginTimeout = 0.5
        let server = try RunneldProcess(config: config)
        let active = try server.connect()
        try active.barrier()
        let silent = try server.connect()
        let lines = try #require(silent.readUntilClosed(timeout: .seconds(10)), "the silent connection is closed")
        #expect(lines == [#"{"ev":"closing","code":"limit","message":"no request within login_timeout (0.5 s)"}"#])
        silent.close()
        #expect(try eventually { try active.stats()["connections"] == 1 ? true : nil } == true)
    }

    /// With tokens, a connection that sends requests but never authenticates is closed at
    /// `login_timeout` with `unauthorized`; one that authenticated stays.
    @Test func anUnauthenticatedConnectionIsClosedAtTheLoginTimeout() throws {
        var config = RunneldConfig()
        config.authTokens = ["secret"]
        config.loginTimeout = 0.5
        let server = try RunneldProcess(config: config)
        let member = try server.connect()
        #expect(try member.request(#"{"op":"auth","token":"secret","ref":1}"#) == ["ok": true, "ref": 1])
        let stranger = try server.connect()
        try stranger.expectFailure(#"{"op":"ping","ref":1}"#, code: "unauthorized", ref: 1)
        let lines = try #require(stranger.readUntilClosed(timeout: .seconds(10)), "the stranger is closed")
        #expect(
            lines == [
                #"{"ev":"closing","code":"unauthorized","message":"not authenticated within login_timeout (0.5 s)"}"#
            ])
        #expect(try member.request(#"{"op":"ping","ref":2}"#) == ["ok": true, "ref": 2])
    }

    /// Past `max_connections_per_address`, the line port answers with a `closing` line and the
    /// HTTP port with `503`; a connection closed frees its slot, on either listener.
    @Test func connectionsPastThePerAddressLimitAreRefusedOnEveryListener() throws {
        var config = RunneldConfig()
        config.maxConnectionsPerAddress = 2
        let server = try RunneldProcess(config: config)
        let first = try server.connect()
        try first.barrier()
        let second = try server.connectHTTP()
        try second.sendRaw("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(second.readLine()?.hasPrefix("HTTP/1.1 200") == true)

        let refused = try server.connect()
        let lines = try #require(refused.readUntilClosed(), "a refused connection is closed")
        #expect(
            lines == [
                #"{"ev":"closing","code":"limit","message":"too many connections from 127.0.0.1: the server allows 2 per address (max_connections_per_address); try again later"}"#
            ])
        let refusedHTTP = try server.connectHTTP()
        try refusedHTTP.sendRaw("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = String(decoding: refusedHTTP.readBytesUntilClosed() ?? [], as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 503 "), "\(answer)")
        #expect(answer.contains("max_connections_per_address"), "\(answer)")

        second.close()
        let next = try #require(try server.connectOnceAdmitted())
        try next.barrier()
        #expect(try first.stats()["connections"] == 2)
    }

    /// The sids and stage lists one connection's subscriptions hold are bounded: past
    /// `max_subscription_bytes` a `sub` fails with `limit`, and an `unsub` makes room again.
    @Test func subscriptionsPastTheConnectionsByteLimitFailWithLimit() throws {
        var config = RunneldConfig()
        config.maxSubscriptionBytes = 4096
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        let longSid = String(repeating: "s", count: 1000)
        // 3 x 1,000 bytes of sid, plus a small stage list.
        try client.subscribe("pin", sid: longSid, ops: [["op": "take", "count": 5]])
        let reply = try client.request([
            "op": "sub", "subject": "pin", "sid": "second",
            "ops": [["op": "mapReplace", "value": .string(String(repeating: "v", count: 1200))]],
            "ref": 2,
        ])
        #expect(reply["code"] == "limit")
        #expect(reply["message"]?.string?.contains("max_subscription_bytes (4096)") == true, "\(reply)")
        try client.expectOK(["op": "unsub", "sid": .string(longSid)])
        try client.subscribe(
            "pin", sid: "second", ops: [["op": "mapReplace", "value": .string(String(repeating: "v", count: 1200))]])
    }

    /// A replay subject keeps no more than `max_replay_bytes` of values: the oldest go first,
    /// as past its capacity, and the newest is always kept.
    @Test func aReplaySubjectDropsItsOldestValuesPastMaxReplayBytes() throws {
        var config = RunneldConfig()
        config.maxReplayBytes = 2048
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "r", "kind": "replay", "capacity": 100])
        // Each value is 502 bytes of JSON: four fit in 2,048.
        for index in 0..<10 {
            try client.publishQuietly("r", .string(String(format: "%03d", index) + String(repeating: "x", count: 497)))
        }
        try client.barrier()
        #expect(try client.stats()["retained_bytes"]?.int == 4 * 502)
        let late = try server.connect()
        try late.subscribe("r", sid: "late")
        let replayed = try late.readEvents(4)["late"] ?? []
        #expect(replayed.map { String($0["value"]?.string?.prefix(3) ?? "") } == ["006", "007", "008", "009"])
        late.expectNoLine()
    }

    /// The values all subjects retain are bounded together: past `max_retained_bytes`, a value
    /// for a replay or behavior subject is refused with `limit` (so is a behavior subject's
    /// `create`); plain subjects, which keep nothing, go on; a delete frees the room.
    @Test func valuesPastMaxRetainedBytesAreRefusedWithLimit() throws {
        var config = RunneldConfig()
        config.maxRetainedBytes = 4096
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        let value = JSON.string(String(repeating: "x", count: 998))  // 1,000 bytes as JSON
        try client.expectOK(["op": "create", "subject": "a", "kind": "replay", "capacity": 10])
        try client.expectOK(["op": "create", "subject": "b", "kind": "replay", "capacity": 10])
        for subject in ["a", "a", "b", "b"] { try client.publish(subject, value) }
        let refused = try client.request(["op": "pub", "subject": "b", "value": value, "ref": 2])
        #expect(refused["code"] == "limit")
        #expect(refused["message"]?.string?.contains("max_retained_bytes (4096)") == true, "\(refused)")
        let behavior = try client.request([
            "op": "create", "subject": "c", "kind": "behavior", "value": value, "ref": 3,
        ])
        #expect(behavior["code"] == "limit")
        try client.publish("plain", value)
        #expect(try client.stats()["retained_bytes"]?.int == 4000)

        try client.expectOK(["op": "delete", "subject": "a"])
        #expect(try client.stats()["retained_bytes"]?.int == 2000)
        try client.publish("b", value)
        let late = try server.connect()
        try late.subscribe("b", sid: "late")
        #expect((try late.readEvents(3)["late"] ?? []).count == 3)
    }

    /// The attack the old bounds allowed (replay subjects of the most values, each value of the
    /// most bytes, as many subjects as allowed): with `max_retained_bytes` at 32 MiB, a client
    /// that tries to make the server keep 400 MiB of values is refused past the limit, and the
    /// server's memory grows by about what the limit implies, not by what was sent.
    @Test func fillingReplaySubjectsStopsAtMaxRetainedBytes() throws {
        let limit = 32 << 20
        var config = RunneldConfig()
        config.maxRetainedBytes = limit
        let server = try RunneldProcess(config: config)
        let client = try server.connect()
        try client.barrier()
        let baseline = try #require(ResidentMemory.bytes(of: server.pid))
        let value = String(repeating: "x", count: (512 << 10) - 2)  // 512 KiB as JSON
        var refused = 0
        for subject in 0..<8 {
            try client.expectOK([
                "op": "create", "subject": .string("fill.\(subject)"), "kind": "replay", "capacity": 100,
            ])
            for _ in 0..<100 {
                try client.send(#"{"op":"pub","subject":"fill.\#(subject)","value":"\#(value)"}"#)
            }
            // Refusals are the only replies to publishes without a ref.
            try client.send(#"{"op":"ping","ref":"fill"}"#)
            while true {
                let reply = try client.readJSON()
                if reply["ref"] == "fill" { break }
                #expect(reply["code"] == "limit", "\(reply)")
                refused += 1
            }
        }
        let retained = try #require(try client.stats()["retained_bytes"]?.int)
        #expect(retained <= limit)
        #expect(retained > limit - (512 << 10))
        #expect(refused == 800 - retained / (512 << 10))
        let rss = try #require(ResidentMemory.bytes(of: server.pid))
        // 32 MiB kept, plus the server's buffers and allocator slack; 400 MiB were sent.
        #expect(rss - baseline < 3 * limit, "RSS grew by \(rss - baseline) bytes")
    }
}
