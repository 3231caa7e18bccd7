import Foundation
import RunnelTestSupport
import Testing

/// Signals: `SIGHUP` reloads the config, `SIGTERM` exits cleanly.
@Suite struct LifecycleTests {
    @Test func sighupReloadsAuthTokens() throws {
        var config = RunneldConfig()
        config.authTokens = ["old-token"]
        let server = try RunneldProcess(config: config)
        let before = try server.connect()
        try before.expectOK(["op": "auth", "token": "old-token"])

        config.authTokens = ["new-token"]
        try server.rewriteConfig(config)
        server.signal(SIGHUP)
        let accepted = try eventually(timeout: .seconds(5), interval: .milliseconds(50)) {
            let client = try server.connect()
            return try client.request(#"{"op":"auth","token":"new-token","ref":1}"#) == ["ok": true, "ref": 1]
                ? client : nil
        }
        #expect(accepted != nil, "the new token was not accepted after SIGHUP")
        #expect(try accepted?.request(#"{"op":"ping","ref":2}"#) == ["ok": true, "ref": 2])

        let stale = try server.connect()
        try stale.expectFailure(#"{"op":"auth","token":"old-token","ref":3}"#, code: "unauthorized", ref: 3)
    }

    @Test func sigtermExitsWithStatusZeroAndClosesConnections() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.subscribe("bye", sid: "s")
        server.signal(SIGTERM)
        // The daemon half-closes and waits up to shutdown_timeout (5 s) for this client's end of
        // input, which it never sends: the exit comes at about 5 s, so wait longer than that.
        let status = try server.waitForExit(timeout: .seconds(10))
        #expect(status == 0)
        #expect(client.readUntilClosed(timeout: .seconds(5)) != nil, "the connection stayed open")
    }

    /// A stop waits `shutdown_timeout` for output to drain, and no longer: a subscriber still
    /// reading a backlog steadily (which keeps a connection's own drain going) is closed when
    /// it passes.
    @Test func sigtermStopsWithinShutdownTimeoutWhileASubscriberStillReads() throws {
        var config = RunneldConfig()
        config.shutdownTimeout = 1
        config.softPendingBytes = 64 << 20
        config.maxPendingBytes = 128 << 20
        let server = try RunneldProcess(config: config)
        let reader = try server.connect(receiveBufferSize: 64 << 10)
        try reader.subscribe("backlog", sid: "s")
        let publisher = try server.connect()
        let value = JSON.string(String(repeating: "x", count: 60_000))
        // 48 MB, under the soft limit: the publisher is never held.
        for _ in 0..<800 { try publisher.publish("backlog", value) }
        server.signal(SIGTERM)
        let stopped = ContinuousClock.now
        var status: Int32?
        // 64 KiB every 10 ms or so: the kernel keeps taking output, and the backlog lasts
        // several seconds, which the connection's drain alone would wait for.
        while status == nil, ContinuousClock.now - stopped < .seconds(30) {
            _ = reader.readBytes(count: 64 << 10, timeout: .milliseconds(10))
            pollPause(.milliseconds(10))
            status = try? server.waitForExit(timeout: .milliseconds(1))
        }
        #expect(status == 0)
        #expect(ContinuousClock.now - stopped < .seconds(3), "the stop waited past shutdown_timeout")
    }

    /// SIGTERM right after the "listening" line: a supervisor may send it at any moment, so the
    /// daemon must handle it before it announces itself.
    @Test func sigtermRightAfterStartupExitsWithStatusZero() throws {
        let server = try RunneldProcess()
        server.signal(SIGTERM)
        let status = try server.waitForExit(timeout: .seconds(5))
        #expect(status == 0)
    }
}
