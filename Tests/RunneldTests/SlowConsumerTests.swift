import RunnelTestSupport
import Testing

/// `max_pending_bytes` and both slow-consumer policies. A slow client shrinks its receive buffer
/// and never reads while a fast client reads after every small batch.
@Suite(.serialized) struct SlowConsumerTests {
    private static let closing: JSON = ["ev": "closing", "code": "slow_consumer"]

    private func setUp(policy: String) throws -> (RunneldProcess, slow: BlockingTCPClient, Flood) {
        var config = RunneldConfig()
        config.maxPendingBytes = 65_536
        config.slowConsumer = policy
        let server = try RunneldProcess(config: config)
        let slow = try server.connect(receiveBufferSize: 4096)
        try slow.subscribe("flood", sid: "slow")
        let fast = try server.connect()
        try fast.subscribe("flood", sid: "fast")
        let publisher = try server.connect()
        return (server, slow, Flood(subject: "flood", publisher: publisher, fast: fast, fastSid: "fast"))
    }

    @Test func disconnectPolicyClosesTheSlowClientWithAClosingLine() throws {
        let (server, slow, setup) = try setUp(policy: "disconnect")
        var flood = setup
        let deadline = Deadline(.seconds(30))
        var receivers = 2
        while receivers == 2 && flood.published < 20_000 && !deadline.hasPassed {
            receivers = try flood.batch(20) ?? -1
        }

        let lines = slow.readUntilClosed(timeout: .seconds(10))
        #expect(lines != nil, "the slow consumer was not closed")
        let received = lines ?? []
        #expect(
            received.last.flatMap { try? JSON.parse($0) } == SlowConsumerTests.closing, "\(received.last ?? "none")")
        // What did arrive is an unbroken prefix of the stream.
        for (n, line) in received.dropLast().enumerated() {
            let event = try JSON.parse(line)
            #expect(event["ev"] == "next" && event["sid"] == "slow" && event["value"]?[0] == .number(Double(n)))
        }

        // The fast subscriber lost nothing and goes on.
        #expect(try flood.batch(5) == 1)
        let stats = try eventually { try flood.publisher.stats()["connections"] == 2 ? true : nil }
        #expect(stats == true)
        _ = server
    }

    @Test func dropPolicyReportsDroppedCountsBeforeTheNextEvent() throws {
        let (server, slow, setup) = try setUp(policy: "drop")
        var flood = setup
        let deadline = Deadline(.seconds(30))
        var dropped = 0
        while dropped == 0 && flood.published < 20_000 && !deadline.hasPassed {
            #expect(try flood.batch(20) == 2)
            dropped = try flood.publisher.stats()["dropped"]?.int ?? 0
        }
        #expect(dropped > 0, "nothing was dropped after \(flood.published) values")

        // Drain the slow client; publish markers until one reaches it.
        var events: [JSON] = []
        var markerSeen = false
        for _ in 0..<20 where !markerSeen {
            #expect(try flood.batch(1) == 2)
            let marker = flood.published - 1
            while let line = slow.readLine(timeout: .seconds(1)) {
                let event = try JSON.parse(line)
                events.append(event)
                if event["ev"] == "next" && event["value"]?[0]?.int == marker {
                    markerSeen = true
                    break
                }
            }
        }
        #expect(markerSeen)

        var delivered = 0
        var reported = 0
        var last = -1
        for (index, event) in events.enumerated() {
            if event["ev"] == "dropped" {
                #expect(event.keys == ["ev", "sid", "count"] && event["sid"] == "slow", "\(event)")
                let count = event["count"]?.int ?? 0
                #expect(count > 0)
                reported += count
                let following: JSON? = index + 1 < events.count ? events[index + 1] : nil
                #expect(following?["ev"] == "next", "a dropped report must precede the next event")
            } else {
                #expect(event["ev"] == "next" && event["sid"] == "slow", "\(event)")
                let n = event["value"]?[0]?.int ?? -1
                #expect(n > last, "values out of order")
                last = n
                delivered += 1
            }
        }
        #expect(reported > 0)
        #expect(delivered + reported == flood.published, "every value is either delivered or counted as dropped")
        #expect(try flood.publisher.stats()["dropped"]?.int == reported)
        _ = server
    }
}
