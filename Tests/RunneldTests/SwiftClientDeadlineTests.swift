import Glibc
import RunnelClient
import RunnelJSON
import Testing

/// Every call of the Swift client has a deadline (`ClientOptions.callTimeout`, or the call's
/// own `timeout`), the wait for a connection that is down included; and a client pointed at the
/// HTTP port is told so.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SwiftClientDeadlineTests {
    let daemon: ChecklistDaemon

    init() throws { daemon = try ChecklistDaemon(toml: SwiftClientRestartTests.restartConfig) }

    /// While runneld is down the client reconnects; a call then fails with `timeout` past its
    /// deadline (the client-wide one, or its own), and works again once the server is back.
    @Test func aCallWhileTheConnectionIsDownFailsPastItsDeadline() async throws {
        let client = try await ClientChecks.connect(daemon) { $0.callTimeout = .milliseconds(300) }
        daemon.kill()
        _ = try await ClientChecks.within(ClientChecks.deadline) {
            while client.isConnected { try await Task.sleep(for: .milliseconds(10)) }
        }
        let request = await ClientChecks.expectError("timeout") { _ = try await client.request("stats") }
        #expect(request?.message == "stats: no connection (the client is reconnecting) within 0.3 s")
        let publish = await ClientChecks.expectError("timeout") {
            try await client.publish("t", .number(1), reply: true, timeout: .milliseconds(200))
        }
        #expect(publish?.message == "pub: no connection (the client is reconnecting) within 0.2 s")
        let quiet = await ClientChecks.expectError("timeout") { try await client.publish("t", .number(1)) }
        #expect(quiet?.message.hasPrefix("pub: no connection") == true)
        try daemon.restart()
        // A call's own deadline outlasts the reconnection's backoff.
        #expect(try await client.publish("t", .number(2), reply: true, timeout: .seconds(20)) == 0)
        await client.close()
    }

    /// A server that takes the request and never answers (stopped with SIGSTOP): the call fails
    /// with `timeout`, and a `sub` it answers later leaves no subscription behind.
    @Test func aSubscribeNeverAnsweredTimesOutAndLeavesNoSubscription() async throws {
        let client = try await ClientChecks.connect(daemon)
        let watcher = try await ClientChecks.connect(daemon)
        try daemon.process.freeze()
        let failed = await ClientChecks.expectError("timeout") {
            _ = try await client.subscribe("late", timeout: .milliseconds(300))
        }
        #expect(failed?.message == "sub: no answer within 0.3 s")
        daemon.process.signal(SIGCONT)
        // The late reply made a subscription, and the client sent `unsub` as it read it. The first
        // ping's answer comes after that reply, so the second ping goes after the `unsub`.
        _ = try await client.request("ping")
        _ = try await client.request("ping")
        #expect(ClientChecks.number(try await watcher.request("stats"), "subscriptions") == 0)
        // The client goes on: the same subject subscribes and takes a value.
        let subscription = try await client.subscribe("late")
        try await watcher.publish("late", .number(7), reply: true)
        #expect(ClientChecks.values(try await ClientChecks.take(subscription, 1)) == [.number(7)])
        await client.close()
        await watcher.close()
    }

    @Test func theHTTPPortIsNamedAsTheWrongOne() async throws {
        let port = try #require(daemon.process.announcedPort("serving HTTP on"))
        let error = await ClientChecks.expectError("wrong_port") {
            _ = try await RunnelClient.connect(url: "runnel://127.0.0.1:\(port)")
        }
        #expect(error?.message.hasPrefix("127.0.0.1:\(port) speaks HTTP: it is runneld's HTTP port") == true)
    }
}
