import RunnelTestSupport
import Testing

/// `stats.timers`, the timer handles armed now: each loop's server's sweep from the moment it
/// serves, plus one for each stage that waits on time, whoever asks and however often.
@Suite struct TimerCountTests {
    /// Each pending stage timer counts once; the count comes back after `unsub`, after a
    /// timer fires and after the connection holding timers closes.
    @Test func timersCountTheServersSweepAndEveryPendingStageTimer() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        // A connection's first request reads the same as its later ones.
        #expect(try client.stats()["timers"] == .idleTimers)
        #expect(try client.stats()["timers"] == .idleTimers)

        let stages: [(sid: String, stage: JSON)] = [
            ("delay", ["op": "delay", "seconds": 30]),
            ("window", ["op": "bufferWithTime", "seconds": 30]),
            ("throttle", ["op": "throttle", "seconds": 30]),
            ("timeout", ["op": "timeout", "seconds": 30]),
            ("sample", ["op": "sample", "seconds": 30]),
        ]
        for (sid, stage) in stages { try client.subscribe("tc", sid: sid, ops: [stage]) }
        // `timeout` and `sample` wait from the start; the others once a value arrives.
        #expect(try client.stats()["timers"] == .timers(stages: 2))
        try client.publishQuietly("tc", 1)
        // `timeout` passes the value on at once and goes on waiting.
        #expect(try client.readJSON() == ["ev": "next", "sid": "timeout", "value": 1])
        #expect(try client.stats()["timers"] == .timers(stages: 5))
        for (sid, _) in stages { try client.expectOK(["op": "unsub", "sid": .string(sid)]) }
        #expect(try client.stats()["timers"] == .idleTimers)

        // A timer that fires is counted no more once its value is out.
        try client.subscribe("tc.fire", sid: "soon", ops: [["op": "delay", "seconds": 0.05]])
        try client.publishQuietly("tc.fire", 2)
        #expect(try client.readJSON() == ["ev": "next", "sid": "soon", "value": 2])
        #expect(try client.stats()["timers"] == .idleTimers)

        // A closed connection's timers go with it.
        let other = try server.connect()
        try other.subscribe("tc", sid: "late", ops: [["op": "timeout", "seconds": 30]])
        #expect(try client.stats()["timers"] == .timers(stages: 1))
        other.close()
        #expect(try eventually { try client.stats()["timers"] == .idleTimers ? true : nil } == true)
    }

    /// The HTTP front door and connections waiting to log in use the server's sweep, not
    /// timers of their own.
    @Test func connectionsArmNoTimersOfTheirOwn() throws {
        var config = RunneldConfig()
        config.authTokens = ["secret"]
        let server = try RunneldProcess(config: config)
        let member = try server.connect()
        #expect(try member.request(#"{"op":"auth","token":"secret","ref":1}"#) == ["ok": true, "ref": 1])
        let waiting = try (0..<3).map { _ in try server.connect() }
        let http = try server.connectHTTP()
        try http.sendRaw("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(http.readLine()?.hasPrefix("HTTP/1.1 200") == true)
        let stats = try member.stats()
        #expect(stats["connections"] == 5 && stats["timers"] == .idleTimers, "\(stats)")
        for connection in waiting { connection.close() }
    }
}
