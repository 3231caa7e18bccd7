import RunnelClient
import RunnelJSON
import Testing

/// The Swift client as a slow consumer (checklist items 9 and 10; the `slow` daemon of
/// `Tests/blackbox/client_checklist.py`, whose small hard limit cuts or drops for a reader that
/// stops at once), and its own bounded buffer (item 10, on a daemon without that limit).
@Suite(.serialized, .timeLimit(.minutes(3))) struct SwiftClientSlowTests {
    static let slowConfig = """
        auth_tokens = ["client-token"]
        max_pending_bytes = 262144
        soft_pending_seconds = 60
        slow_consumer = "disconnect"
        compression = false
        """

    static func padded(_ n: Int) -> JSONValue {
        .object(JSONObject([("n", .number(Double(n))), ("pad", .string(String(repeating: "x", count: 1000)))]))
    }

    static func n(_ event: SubscriptionEvent) -> Int? {
        guard case .value(let value) = event, case .object(let object) = value.value,
            case .number(let n)? = object["n"]
        else { return nil }
        return Int(n)
    }

    /// A client that stops reading at once (`wait` with a buffer of 1), its disconnects'
    /// reasons kept in `reasons`.
    static func stalling(_ daemon: ChecklistDaemon, _ reasons: Reasons) async throws -> RunnelClient {
        try await ClientChecks.connect(daemon) { options in
            options.buffer = 1
            options.overflow = .wait
            options.onDisconnect = { reasons.add($0) }
        }
    }

    /// 9: a `closing` line is the reason given for the disconnect (`slow_consumer`), and the
    /// subscription then resumes with nothing missed.
    @Test func aClosingLineIsTheDisconnectReasonAndTheSubscriptionResumes() async throws {
        let daemon = try ChecklistDaemon(toml: Self.slowConfig)
        let reasons = Reasons()
        // The server cuts it.
        let subscriber = try await Self.stalling(daemon, reasons)
        let publisher = try await ClientChecks.connect(daemon)
        let watcher = try await ClientChecks.connect(daemon)
        let count = 20_000  // 20 MB: past the kernel's buffers and the server's 256 KiB
        _ = try await publisher.request(
            "create", ["subject": .string("slow.r"), "kind": .string("replay"), "capacity": .number(Double(count))])
        let subscription = try await subscriber.subscribe("slow.r")
        // Published meanwhile: the server cuts the reader a few megabytes in, and flushes its
        // closing line for 2 s from then, so the reading starts as soon as the cut is counted,
        // not after the rest is published (which can take longer than that on a loaded machine).
        let publishing = Task {
            for n in 0..<count { try await publisher.publish("slow.r", Self.padded(n)) }
        }
        _ = try await ClientChecks.stats(watcher, within: .seconds(30)) {
            ClientChecks.number($0, "slow_consumer_disconnects") == 1
        }
        #expect(reasons.all.isEmpty, "the client read past a full buffer")
        let seen = try await ClientChecks.take(subscription, count, within: .seconds(30)).compactMap(Self.n)
        try await publishing.value
        await watcher.close()
        #expect(seen == Array(0..<count))
        let codes = Set(reasons.all.map(\.code))
        #expect(codes.contains("slow_consumer") && codes.isSubset(of: ["slow_consumer", "connection_lost"]))
        await subscriber.close()
        await publisher.close()
    }

    /// 10: under the server's policy `drop`, its `dropped` events are gaps with their count,
    /// which add up to its `stats.dropped`.
    @Test func theServersDroppedEventsAreGapsWithTheirCount() async throws {
        let daemon = try ChecklistDaemon(toml: Self.slowConfig)
        let subscriber = try await ClientChecks.connect(daemon) { options in
            options.buffer = 1
            options.overflow = .wait
        }
        let publisher = try await ClientChecks.connect(daemon)
        let before = try await publisher.request("stats")
        _ = try await publisher.request(
            "create", ["subject": .string("slow.drop"), "kind": .string("subject"), "slow_consumer": .string("drop")])
        let subscription = try await subscriber.subscribe("slow.drop")
        let count = 20_000
        for n in 0..<count { try await publisher.publish("slow.drop", Self.padded(n)) }
        _ = try await ClientChecks.stats(publisher, within: .seconds(30)) {
            ClientChecks.number($0, "dropped") > ClientChecks.number(before, "dropped")
        }
        // Consumed meanwhile: the marker published after the drops ends the reading.
        let consumer = Task {
            var events: [SubscriptionEvent] = []
            for try await event in subscription {
                events.append(event)
                if Self.n(event) == count { break }
            }
            return events
        }
        _ = try await subscriber.request("ping")
        try await publisher.publish("slow.drop", Self.padded(count), reply: true)
        let events = try await ClientChecks.within(.seconds(30)) { try await consumer.value }
        let values = events.compactMap(Self.n)
        let gaps = events.compactMap { if case .gap(let gap) = $0 { return gap } else { return nil } }
        #expect(!gaps.isEmpty && gaps.allSatisfy { $0.reason == .dropped })
        let dropped = gaps.reduce(0) { $0 + ($1.count ?? 0) }
        #expect(values == values.sorted() && values.count + dropped == count + 1)
        let after = try await publisher.request("stats")
        #expect(ClientChecks.number(after, "dropped") - ClientChecks.number(before, "dropped") == dropped)
        await subscriber.close()
        await publisher.close()
    }

    /// 15: a `conflate` subscription whose client stops reading gets the latest values in
    /// order, the ones the server replaced reported as `dropped` gaps with their count, and is
    /// not cut: without `conflate`, 20 MB past the 256 KiB limit would cut it.
    @Test func aConflatingSubscriptionGetsTheLatestValuesAndAGapForTheRest() async throws {
        let daemon = try ChecklistDaemon(toml: Self.slowConfig)
        let reasons = Reasons()
        let subscriber = try await Self.stalling(daemon, reasons)
        let publisher = try await ClientChecks.connect(daemon)
        let before = try await publisher.request("stats")
        let subscription = try await subscriber.subscribe("slow.conflate", SubscribeOptions(conflate: true))
        let count = 20_000
        for n in 0..<count { try await publisher.publish("slow.conflate", Self.padded(n)) }
        _ = try await publisher.request("ping")
        let consumer = Task {
            var events: [SubscriptionEvent] = []
            for try await event in subscription {
                events.append(event)
                if Self.n(event) == count - 1 { break }
            }
            return events
        }
        let events = try await ClientChecks.within(.seconds(30)) { try await consumer.value }
        let values = events.compactMap(Self.n)
        let gaps = events.compactMap { if case .gap(let gap) = $0 { return gap } else { return nil } }
        #expect(!gaps.isEmpty && gaps.allSatisfy { $0.reason == .dropped })
        let dropped = gaps.reduce(0) { $0 + ($1.count ?? 0) }
        #expect(values == Array(Set(values)).sorted() && values.count + dropped == count)
        let after = try await publisher.request("stats")
        #expect(
            ClientChecks.number(after, "slow_consumer_disconnects")
                == ClientChecks.number(before, "slow_consumer_disconnects"))
        #expect(ClientChecks.number(after, "dropped") - ClientChecks.number(before, "dropped") == dropped)
        #expect(reasons.all.isEmpty)
        await subscriber.close()
        await publisher.close()
    }

    /// 10: the client's buffer is bounded: past it the newest values are dropped and reported as
    /// one gap with their count (not the server's `dropped`).
    @Test func aFullBufferDropsTheNewestAndReportsAGap() async throws {
        let daemon = try ChecklistDaemon(toml: SwiftClientTests.mainConfig)
        let subscriber = try await ClientChecks.connect(daemon) { $0.buffer = 10 }
        let publisher = try await ClientChecks.connect(daemon)
        let before = try await publisher.request("stats")
        let subscription = try await subscriber.subscribe("buffer.drop")
        for n in 0..<50 { try await publisher.publish("buffer.drop", .number(Double(n))) }
        _ = try await publisher.request("ping")
        // The subscriber's ping is answered after every event the server wrote it before.
        _ = try await subscriber.request("ping")
        let first = try await ClientChecks.take(subscription, 11)
        #expect(ClientChecks.values(Array(first.prefix(10))) == (0..<10).map { .number(Double($0)) })
        guard case .gap(let gap) = first[10] else { throw HarnessError.badJSON("no gap: \(first[10])") }
        #expect(gap == Gap(.overflow, count: 40))
        try await publisher.publish("buffer.drop", .number(50))
        #expect(ClientChecks.values(try await ClientChecks.take(subscription, 1)) == [.number(50)])
        let after = try await publisher.request("stats")
        #expect(ClientChecks.number(after, "dropped") == ClientChecks.number(before, "dropped"))
        await subscriber.close()
        await publisher.close()
    }

    /// 10: under `Overflow.wait` the client stops reading instead, and loses nothing.
    @Test func aFullBufferUnderOverflowWaitLosesNothing() async throws {
        let daemon = try ChecklistDaemon(toml: SwiftClientTests.mainConfig)
        let subscriber = try await ClientChecks.connect(daemon) { options in
            options.buffer = 10
            options.overflow = .wait
        }
        let publisher = try await ClientChecks.connect(daemon)
        let subscription = try await subscriber.subscribe("buffer.wait")
        let pad = String(repeating: "x", count: 100)
        for n in 0..<2000 {
            try await publisher.publish(
                "buffer.wait", .object(JSONObject([("n", .number(Double(n))), ("pad", .string(pad))])))
        }
        _ = try await publisher.request("ping")
        #expect(try await ClientChecks.take(subscription, 2000).compactMap(Self.n) == Array(0..<2000))
        await subscriber.close()
        await publisher.close()
    }
}

/// Checklist item 1 with JWTs (the `expiry` daemon of `Tests/blackbox/client_checklist.py`).
@Suite(.timeLimit(.minutes(2))) struct SwiftClientExpiryTests {
    /// An expired JWT fails at connect (`JWT expired`); one that expires while connected ends
    /// the connection with the server's `closing` line, which ends the subscription with that
    /// error, and the client does not reconnect.
    @Test func anExpiredTokenFailsAtConnectAndAnExpiringOneEndsTheConnection() async throws {
        let daemon = try ChecklistDaemon(toml: "jwt_secrets = [\"\(ChecklistDaemon.jwtSecret)\"]")
        let expired = await ClientChecks.expectError("unauthorized") {
            _ = try await ClientChecks.connect(daemon, token: try ClientChecks.expiringToken(-60))
        }
        #expect(expired?.message == "JWT expired")
        // Twenty seconds: time to connect, subscribe and take a value first on a machine loaded
        // by the parallel suites. A machine so loaded that even twenty pass before that is done
        // (the token refused as `JWT expired` on the way) gets a fresh token, twice at most:
        // what is checked is what happens once it expires.
        var attempt = 0
        var connected: (RunnelClient, Subscription, Reasons)?
        while connected == nil {
            attempt += 1
            do {
                connected = try await Self.subscribedWithExpiringToken(daemon)
            } catch let error as RunnelError where error.message == "JWT expired" && attempt < 3 {}
        }
        let (client, subscription, reasons) = connected!
        let ended = await ClientChecks.expectError("unauthorized") {
            _ = try await ClientChecks.next(subscription, within: .seconds(30))
        }
        #expect(ended?.message == "token expired")
        #expect(reasons.all.map { "\($0.code): \($0.message)" } == ["unauthorized: token expired"])
        await ClientChecks.expectError("unauthorized") { try await client.publish("expiry.a", .number(2), reply: true) }
        await client.close()
    }

    /// A client with a JWT that expires in 20 s, subscribed to `expiry.a`, having taken one
    /// value there; closed when any step fails.
    private static func subscribedWithExpiringToken(_ daemon: ChecklistDaemon) async throws -> (
        RunnelClient, Subscription, Reasons
    ) {
        let reasons = Reasons()
        let client = try await ClientChecks.connect(daemon, token: try ClientChecks.expiringToken(20)) {
            $0.onDisconnect = { reasons.add($0) }
        }
        do {
            let subscription = try await client.subscribe("expiry.a")
            #expect(try await client.publish("expiry.a", .number(1), reply: true) == 1)
            #expect(ClientChecks.values(try await ClientChecks.take(subscription, 1)) == [.number(1)])
            return (client, subscription, reasons)
        } catch {
            await client.close()
            throw error
        }
    }
}
