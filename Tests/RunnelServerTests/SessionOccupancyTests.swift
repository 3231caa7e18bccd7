import RunnelProtocol
import Testing

@testable import RunnelServer

/// `$sys.occupancy.S` and the `$` names over `MemoryTransport`s (the wire tests, with the
/// 100 ms coalescing in real time, are `Tests/blackbox/test_occupancy.py`): counts of named
/// and pattern subscriptions, 0 -> 1 and 1 -> 0 at once, patterns of occupancy subjects, rights,
/// and writes to the server's names refused. The harness's loop never runs, so a change that
/// waits for the coalescing timer is not sent here.
@Suite struct SessionOccupancyTests {
    private static func occupancy(_ count: Int, sid: String = "o") -> String {
        #"{"ev":"next","sid":"\#(sid)","value":{"subscribers":\#(count)}}"#
    }

    /// A harness and a client watching `$sys.occupancy.a` as `o`, which has its first value.
    private static func watching() -> (SessionHarness, SessionClient) {
        let harness = SessionHarness()
        let watcher = harness.connect()
        #expect(
            watcher.send(#"{"op":"sub","subject":"$sys.occupancy.a","sid":"o"}"#)
                == [#"{"ok":true,"sid":"o"}"#, occupancy(0)])
        return (harness, watcher)
    }

    @Test func theFirstSubscriberAndTheLastAreToldAtOnce() {
        let (harness, watcher) = Self.watching()
        let client = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#)
        #expect(watcher.lines() == [Self.occupancy(1)])
        // 1 -> 2 within 100 ms of the last value waits for the coalescing timer.
        client.send(#"{"op":"sub","subject":"a","sid":"y"}"#)
        #expect(watcher.lines().isEmpty)
        client.send(#"{"op":"unsub","sid":"y"}"#)
        client.close()
        #expect(watcher.lines() == [Self.occupancy(0)])
        // The count a late reader gets is the one now.
        let late = harness.connect()
        #expect(late.send(#"{"op":"sub","subject":"$sys.occupancy.a","sid":"o"}"#).last == Self.occupancy(0))
    }

    @Test func patternSubscriptionsCountAndOccupancyIsNotCounted() {
        let (harness, watcher) = Self.watching()
        let client = harness.connect()
        client.send(#"{"op":"sub","subject":"a.>","sid":"p"}"#)
        #expect(watcher.lines().isEmpty, "a.> does not match a")
        client.send(#"{"op":"sub","subject":"*","sid":"q"}"#)
        #expect(watcher.lines() == [Self.occupancy(1)])
        // Nor is a subscription to the server's names counted, or matched by other patterns:
        // `>` gets nothing of `$sys.occupancy.a`.
        let replies = client.send(
            #"{"op":"sub","subject":">","sid":"s"}"#, #"{"op":"sub","subject":"$sys.occupancy.a","sid":"r"}"#)
        #expect(replies.last == Self.occupancy(1, sid: "r"))
        #expect(harness.server.subjects.local.subscribers(of: "a") == 2)
        #expect(!replies.contains { $0.contains(#""sid":"s","subject""#) })
        #expect(watcher.lines().isEmpty, "1 -> 2 waits for the coalescing timer")
    }

    @Test func anOccupancyPatternGetsEverySubjectsCountsNamingThem() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"sub","subject":"b","sid":"x"}"#)
        let watcher = harness.connect()
        #expect(
            watcher.send(#"{"op":"sub","subject":"$sys.occupancy.>","sid":"w"}"#) == [
                #"{"ok":true,"sid":"w"}"#,
                #"{"ev":"next","sid":"w","subject":"$sys.occupancy.b","value":{"subscribers":1}}"#,
            ])
        client.send(#"{"op":"sub","subject":"c","sid":"y"}"#)
        client.send(#"{"op":"unsub","sid":"x"}"#)
        #expect(
            watcher.lines() == [
                #"{"ev":"next","sid":"w","subject":"$sys.occupancy.c","value":{"subscribers":1}}"#,
                #"{"ev":"next","sid":"w","subject":"$sys.occupancy.b","value":{"subscribers":0}}"#,
            ])
        // Once nobody reads them, the occupancy subjects go.
        watcher.close()
        #expect(
            harness.server.subjects["$sys.occupancy.b"] == nil && harness.server.subjects["$sys.occupancy.c"] == nil)
    }

    @Test func theServersNamesAreReadOnlyAndOnlyOccupancyIsThere() {
        let harness = SessionHarness()
        let client = harness.connect()
        for request in [
            #"{"op":"pub","subject":"$sys.occupancy.a","value":1,"ref":1}"#,
            #"{"op":"create","subject":"$x","kind":"subject","ref":1}"#,
            #"{"op":"complete","subject":"$sys.occupancy.a","ref":1}"#,
            #"{"op":"error","subject":"$x","message":"m","ref":1}"#,
            #"{"op":"delete","subject":"$x","ref":1}"#,
        ] {
            let reply = client.send(request).first ?? ""
            #expect(reply.hasPrefix(#"{"ok":false,"ref":1,"code":"unauthorized""#), "\(request): \(reply)")
        }
        for subject in ["$x", "$sys.other", "$sys.occupancy.$x", "$sys.>", "$sys.occupancy.a.*.>.b"] {
            let reply = client.send(#"{"op":"sub","subject":"\#(subject)","ref":1}"#).first ?? ""
            #expect(!reply.hasPrefix(#"{"ok":true"#), "\(subject): \(reply)")
        }
        #expect(
            client.send(#"{"op":"sub","subject":"$x","ref":1}"#).first?.contains(#""code":"unknown_subject""#) == true)
        #expect(harness.server.subjects["$x"] == nil)
    }

    @Test func aTokenReadsASubjectsOccupancyWhenItMaySubscribeToIt() throws {
        let config = try ServerConfig.parse(
            toml: """
                [[tokens]]
                token = "reader"
                subscribe = ["sensors.>"]
                """)
        let harness = SessionHarness { $0 = config }
        let client = harness.connect()
        #expect(client.send(#"{"op":"auth","token":"reader"}"#) == [#"{"ok":true}"#])
        #expect(
            client.send(#"{"op":"sub","subject":"$sys.occupancy.sensors.a","ref":1}"#).first?.hasPrefix(#"{"ok":true"#)
                == true)
        let refused = client.send(#"{"op":"sub","subject":"$sys.occupancy.other","ref":2}"#).first ?? ""
        #expect(refused.contains(#""code":"unauthorized""#), "\(refused)")
        #expect(
            client.send(#"{"op":"sub","subject":"$sys.occupancy.>","ref":3}"#).first?.hasPrefix(#"{"ok":true"#) == true)
    }
}
