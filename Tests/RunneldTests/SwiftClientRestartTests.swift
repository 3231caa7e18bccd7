import RunnelClient
import RunnelJSON
import Synchronization
import Testing

/// The Swift client across runneld killed with SIGKILL and started again on its port and data
/// (checklist items 7 and 8; the `restart` daemon of `Tests/blackbox/client_checklist.py`).
@Suite(.serialized, .timeLimit(.minutes(2))) struct SwiftClientRestartTests {
    static let restartConfig = """
        auth_tokens = ["client-token"]
        data_dir = "DIR/data"
        fsync = "always"
        """

    let daemon: ChecklistDaemon

    init() throws { daemon = try ChecklistDaemon(toml: Self.restartConfig) }

    /// 7: under a durable subscription the client reconnects, authenticates again and resumes:
    /// every value once; a pattern, which cannot resume, reports one gap and repeats nothing.
    @Test func aDurableSubscriptionResumesAcrossAKillWithNothingLostOrRepeated() async throws {
        let publisherLost = Reasons()
        let subscriberLost = Reasons()
        let publisher = try await ClientChecks.connect(daemon) { $0.onDisconnect = { publisherLost.add($0) } }
        let subscriber = try await ClientChecks.connect(daemon) { $0.onDisconnect = { subscriberLost.add($0) } }
        _ = try await publisher.request(
            "create",
            [
                "subject": .string("durable.orders"), "kind": .string("replay"), "capacity": .number(1000),
                "durable": .bool(true),
            ])
        let single = try await publisher.subscribe("durable.orders")
        let other = try await subscriber.subscribe("durable.orders")
        let pattern = try await subscriber.subscribe("durable.>")
        for n in 1...50 { try await publisher.publish("durable.orders", .number(Double(n)), reply: n == 50) }
        for subscription in [single, other, pattern] {
            #expect(
                try await ClientChecks.values(subscription, until: .number(50)).values
                    == (1...50).map { .number(Double($0)) })
        }
        daemon.kill()
        _ = try await ClientChecks.within(ClientChecks.deadline) {
            while publisherLost.all.isEmpty || subscriberLost.all.isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        try daemon.restart()
        // The publisher's calls wait for its reconnection; with fsync "always" the epoch holds.
        for n in 51...100 { try await publisher.publish("durable.orders", .number(Double(n)), reply: n == 100) }
        let expected = (51...100).map { JSONValue.number(Double($0)) }
        let resumed = try await ClientChecks.values(single, until: .number(100))
        #expect(resumed.values == expected && resumed.gaps.isEmpty)
        let resumedOther = try await ClientChecks.values(other, until: .number(100))
        #expect(resumedOther.values == expected && resumedOther.gaps.isEmpty)
        let patterned = try await ClientChecks.values(pattern, until: .number(100))
        #expect(patterned.values == expected)
        #expect(
            patterned.gaps.map { "\($0.at) \($0.gap.reason) \($0.gap.cause?.code ?? "-")" } == [
                "0 notResumed connection_lost"
            ])
        #expect(single.position?.hasSuffix(":100") == true)
        #expect(publisherLost.all.map(\.code) == ["connection_lost"])
        await publisher.close()
        await subscriber.close()
    }

    /// 8: under a plain subscription the client reports a gap (`not_resumed`, with the
    /// disconnect's reason) before the values after the restart; a client told not to reconnect
    /// ends its subscription and its calls with `connection_lost`; a subscribe made while the
    /// client reconnects waits for the connection, and is made once.
    @Test func aPlainSubscriptionReportsAGapAcrossAKill() async throws {
        let reasons = Reasons()
        let reconnected = Reasons()
        let client = try await ClientChecks.connect(daemon) { options in
            options.onDisconnect = { reasons.add($0) }
            options.onReconnect = { reconnected.add(RunnelError(code: "reconnected")) }
        }
        let subscription = try await client.subscribe("plain.ticks")
        let onceLost = Reasons()
        let once = try await ClientChecks.connect(daemon) { options in
            options.reconnect = false
            options.onDisconnect = { onceLost.add($0) }
        }
        let ended = try await once.subscribe("plain.ticks")
        for n in 1...3 { try await client.publish("plain.ticks", .number(Double(n))) }
        #expect(try await ClientChecks.values(subscription, until: .number(3)).values == [1, 2, 3].map { .number($0) })
        #expect(try await ClientChecks.values(ended, until: .number(3)).values == [1, 2, 3].map { .number($0) })
        let position = try #require(subscription.position)
        daemon.kill()
        _ = try await ClientChecks.within(ClientChecks.deadline) {
            while reasons.all.isEmpty || onceLost.all.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        }
        let late = Task { try await client.subscribe("plain.late") }
        try daemon.restart()
        await ClientChecks.expectError("connection_lost") { _ = try await ClientChecks.next(ended) }
        await ClientChecks.expectError("connection_lost") { try await once.publish("plain.ticks", .number(0)) }
        guard case .gap(let gap)? = try await ClientChecks.next(subscription) else {
            throw HarnessError.badJSON("no gap after the restart")
        }
        #expect(gap.reason == .notResumed && gap.count == nil && gap.cause?.code == "connection_lost")
        #expect(reasons.all.map(\.code) == ["connection_lost"])
        try await client.publish("plain.ticks", .number(4))
        #expect(reconnected.all.count == 1)  // before any call goes through on the new connection
        guard case .value(let value)? = try await ClientChecks.next(subscription) else {
            throw HarnessError.badJSON("no value after the gap")
        }
        #expect(value.value == .number(4))
        #expect(value.position?.split(separator: ":").first != position.split(separator: ":").first)
        #expect(!once.isConnected)
        let lateSubscription = try await ClientChecks.within(ClientChecks.deadline) { try await late.value }
        try await client.publish("plain.late", .string("late"))
        #expect(try await ClientChecks.values(lateSubscription, until: .string("late")).values == [.string("late")])
        await client.close()
        await once.close()
    }
}
