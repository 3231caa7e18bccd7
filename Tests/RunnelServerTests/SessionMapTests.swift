import Testing

@testable import RunnelServer

/// Maps (docs/protocol.md, "Keyed subjects"), in process, on a clock the test sets: the
/// snapshot, `synced` and the changes after it, removals and expiry, positions and `from`,
/// `max_keys`, stages with `$key`, subscriptions kept to one key by their first `filter`,
/// patterns, and conflation per key.
@Suite struct SessionMapTests {
    private let clock = SessionHistoryTests.ManualPublishClock()
    private let harness: SessionHarness

    init() {
        let clock = clock
        harness = SessionHarness { _ in MemorySubjectStore(retained: RetainedValues(clock: clock)) }
    }

    private static func next(_ sid: String, _ key: String, _ value: String) -> String {
        #"{"ev":"next","sid":"\#(sid)","key":"\#(key)","value":\#(value)}"#
    }

    private static func removed(_ sid: String, _ key: String, _ reason: String = "deleted") -> String {
        #"{"ev":"removed","sid":"\#(sid)","key":"\#(key)","reason":"\#(reason)"}"#
    }

    /// Writes `value` to `key` of map `m`.
    private static func write(_ client: SessionClient, _ key: String, _ value: String) {
        client.send(#"{"op":"pub","subject":"m","key":"\#(key)","value":\#(value)}"#)
    }

    /// A connection that made map `m` and wrote `writes` to it, in order.
    private func mapWriter(writing writes: KeyValuePairs<String, String>) -> SessionClient {
        let writer = harness.connect()
        writer.send(#"{"op":"create","subject":"m","kind":"map"}"#)
        for (key, value) in writes { Self.write(writer, key, value) }
        return writer
    }

    /// The position in `line`'s `pos`.
    private static func position(in line: String) -> String {
        String(line.split(separator: "\"pos\":\"")[1].prefix { $0 != "\"" })
    }

    @Test func aSubscriptionGetsTheSnapshotThenSyncedThenEveryChangeInOrder() {
        let writer = harness.connect()
        #expect(writer.send(#"{"op":"create","subject":"m","kind":"map","ref":1}"#) == [#"{"ok":true,"ref":1}"#])
        Self.write(writer, "a", "1")
        Self.write(writer, "b", #"{"x":2}"#)
        Self.write(writer, "a", "3")
        let reader = harness.connect()
        let opening = reader.send(#"{"op":"sub","subject":"m","sid":"s"}"#)
        #expect(opening.first == #"{"ok":true,"sid":"s"}"#)
        #expect(Set(opening[1...2]) == [Self.next("s", "a", "3"), Self.next("s", "b", #"{"x":2}"#)])
        #expect(opening[3...] == [#"{"ev":"synced","sid":"s"}"#])
        #expect(
            writer.send(
                #"{"op":"pub","subject":"m","key":"b","delete":true,"ref":2}"#,
                #"{"op":"pub","subject":"m","key":"zz","delete":true,"ref":3}"#) == [
                    #"{"ok":true,"ref":2,"receivers":1}"#, #"{"ok":true,"ref":3,"receivers":1}"#,
                ])
        Self.write(writer, "c", "true")
        #expect(reader.lines() == [Self.removed("s", "b"), Self.next("s", "c", "true")])
        #expect(writer.send(#"{"op":"list","ref":4}"#)[0].contains(#""kind":"map","keys":2,"max_keys":100000"#))
        reader.close()
        writer.close()
    }

    @Test func badKeysAndKindsAreRefusedAndChangeNothing() {
        let client = harness.connect()
        client.send(
            #"{"op":"create","subject":"m","kind":"map","max_keys":1}"#,
            #"{"op":"create","subject":"p","kind":"subject"}"#)
        let long = String(repeating: "k", count: 256)
        let refusals = client.send(
            #"{"op":"pub","subject":"m","value":1,"ref":1}"#,
            #"{"op":"pub","subject":"m","key":"","value":1,"ref":2}"#,
            #"{"op":"pub","subject":"m","key":"\#(long)","value":1,"ref":3}"#,
            #"{"op":"pub","subject":"m","key":7,"value":1,"ref":4}"#,
            #"{"op":"pub","subject":"p","key":"a","value":1,"ref":5}"#,
            #"{"op":"pub","subject":"p","delete":true,"ref":6}"#,
            #"{"op":"pub","subject":"nothing","key":"a","value":1,"ref":7}"#,
            #"{"op":"create","subject":"m","kind":"map","ref":8}"#,
            #"{"op":"create","subject":"n","kind":"map","capacity":3,"ref":9}"#,
            #"{"op":"create","subject":"n","kind":"map","durable":true,"ref":10}"#,
            #"{"op":"sub","subject":"m","since":0,"ref":11}"#)
        #expect(refusals.count == 11 && refusals.allSatisfy { $0.contains(#""ok":false"#) })
        #expect(refusals[7].contains(#""code":"kind_mismatch""#) && refusals[7].contains("map (max_keys 1)"))
        #expect(refusals.enumerated().allSatisfy { $0.offset == 7 || $0.element.contains(#""code":"bad_request""#) })
        // Nothing was made or written: a 256-byte key is one too many, a second key one past max_keys.
        #expect(client.send(#"{"op":"pub","subject":"m","key":"\#(long.dropLast())","value":1,"ref":12}"#).count == 1)
        #expect(
            client.send(#"{"op":"pub","subject":"m","key":"b","value":2,"ref":13}"#)[0].contains(#""code":"limit""#))
        #expect(client.send(#"{"op":"sub","subject":"m","sid":"s"}"#).count == 3)
        #expect(!client.send(#"{"op":"list","ref":14}"#)[0].contains("nothing"))
        client.close()
    }

    @Test func fromResumesWithTheChangesAfterItOrStartsOverWithASnapshot() {
        let writer = harness.connect()
        writer.send(#"{"op":"create","subject":"m","kind":"map","max_keys":2}"#)
        let reader = harness.connect()
        reader.send(#"{"op":"sub","subject":"m","sid":"s","positions":true}"#)
        Self.write(writer, "a", "1")
        let at = Self.position(in: reader.lines()[0])
        Self.write(writer, "b", "2")
        writer.send(#"{"op":"pub","subject":"m","key":"a","delete":true}"#)
        reader.close()
        let resumer = harness.connect()
        let resumed = resumer.send(#"{"op":"sub","subject":"m","sid":"r","from":"\#(at)"}"#)
        #expect(resumed.count == 4 && resumed[0] == #"{"ok":true,"sid":"r","resumed":true}"#)
        #expect(resumed[1].hasPrefix(#"{"ev":"next","sid":"r","key":"b","value":2,"pos":"#))
        #expect(resumed[2].hasPrefix(#"{"ev":"removed","sid":"r","key":"a","reason":"deleted","pos":"#))
        // `synced` carries the map's position (what a client holding the table resumes from).
        #expect(resumed[3] == #"{"ev":"synced","sid":"r","pos":"\#(Self.position(in: resumed[2]))"}"#)
        // The map keeps its last 1024 changes (max(1024, max_keys)): the first is gone after 1025 more.
        for value in 0..<1025 { Self.write(writer, "b", "\(value)") }
        resumer.close()
        let restarted = harness.connect().send(#"{"op":"sub","subject":"m","sid":"t","from":"\#(at)"}"#)
        #expect(restarted[0] == #"{"ok":true,"sid":"t","resumed":false}"#)
        #expect(restarted[1].hasPrefix(#"{"ev":"next","sid":"t","key":"b","value":1024,"pos":"#))
        #expect(restarted[2...] == [#"{"ev":"synced","sid":"t","pos":"\#(Self.position(in: restarted[1]))"}"#])
        writer.close()
    }

    @Test func keysNotWrittenForTtlSAreRemovedAsExpiredByTheSweep() {
        let client = harness.connect()
        clock.time = 10_000
        client.send(#"{"op":"create","subject":"m","kind":"map","ttl_s":2}"#)
        Self.write(client, "a", "1")
        clock.time = 11_000
        Self.write(client, "b", "2")
        client.send(#"{"op":"sub","subject":"m","sid":"s","ts":true}"#)
        clock.time = 11_500
        Self.write(client, "a", "3")
        _ = client.lines()
        // a was written again at 11.5 s, so only b is due at 13 s.
        clock.time = 13_000
        harness.run { harness.server.subjects.retained.dropExpired() }
        #expect(client.lines() == [#"{"ev":"removed","sid":"s","key":"b","reason":"expired","ts":13000}"#])
        clock.time = 13_600
        harness.run { harness.server.subjects.retained.dropExpired() }
        #expect(client.lines() == [#"{"ev":"removed","sid":"s","key":"a","reason":"expired","ts":13600}"#])
        #expect(client.send(#"{"op":"list","ref":1}"#)[0].contains(#""ttl_s":2,"keys":0"#))
        client.close()
    }

    @Test func stagesSeeTheKeyAndARemovalPassesThemOnlyForAKeyTheyLetThrough() {
        let writer = mapWriter(writing: ["a": "1", "b": "2"])
        let reader = harness.connect()
        let opening = reader.send(
            #"{"op":"sub","subject":"m","sid":"s","ops":[{"op":"filter","expr":"$key != \"b\""},{"op":"map","expr":"{\"k\": $key, \"v\": .}"}]}"#
        )
        #expect(opening[1...] == [Self.next("s", "a", #"{"k":"a","v":1}"#), #"{"ev":"synced","sid":"s"}"#])
        for key in ["a", "b"] { writer.send(#"{"op":"pub","subject":"m","key":"\#(key)","delete":true}"#) }
        #expect(reader.lines() == [Self.removed("s", "a")])
        reader.close()
        writer.close()
    }

    @Test func aSubscriptionKeptToOneKeyByItsFirstFilterGetsThatKeysChangesOnly() {
        let writer = mapWriter(writing: ["a": "1", "b": "2"])
        let panel = harness.connect()
        let synced = { (sid: String) in #"{"ev":"synced","sid":"\#(sid)"}"# }
        // Either way round, with a stage after it, and a key not written yet.
        #expect(
            panel.send(#"{"op":"sub","subject":"m","sid":"p","ops":[{"op":"filter","expr":"$key == \"a\""}]}"#)
                == [#"{"ok":true,"sid":"p"}"#, Self.next("p", "a", "1"), synced("p")])
        #expect(
            panel.send(
                #"{"op":"sub","subject":"m","sid":"q","ops":[{"op":"filter","expr":"\"b\" == $key"},{"op":"map","expr":". * 10"}]}"#
            ) == [#"{"ok":true,"sid":"q"}"#, Self.next("q", "b", "20"), synced("q")])
        #expect(
            panel.send(#"{"op":"sub","subject":"m","sid":"r","ops":[{"op":"filter","expr":"$key == \"c\""}]}"#)
                == [#"{"ok":true,"sid":"r"}"#, synced("r")])
        // They follow their keys through the map's router, not by testing every change.
        #expect(harness.run { harness.server.subjects["m"]?.keyRouter?.followers } == 3)
        // Each keyed subscription counts as a receiver, whatever its key.
        #expect(
            writer.send(#"{"op":"pub","subject":"m","key":"a","value":5,"ref":1}"#) == [
                #"{"ok":true,"ref":1,"receivers":3}"#
            ])
        Self.write(writer, "b", "6")
        Self.write(writer, "c", "7")
        writer.send(#"{"op":"pub","subject":"m","key":"a","delete":true}"#)
        writer.send(#"{"op":"pub","subject":"m","key":"b","delete":true}"#)
        #expect(
            panel.lines() == [
                Self.next("p", "a", "5"), Self.next("q", "b", "60"), Self.next("r", "c", "7"), Self.removed("p", "a"),
                Self.removed("q", "b"),
            ])
        // One that stops following is no receiver; the map's end reaches the others.
        panel.send(#"{"op":"unsub","sid":"p"}"#)
        #expect(
            writer.send(#"{"op":"pub","subject":"m","key":"c","value":8,"ref":2}"#) == [
                #"{"ok":true,"ref":2,"receivers":2}"#
            ])
        #expect(panel.lines() == [Self.next("r", "c", "8")])
        writer.send(#"{"op":"complete","subject":"m"}"#)
        #expect(Set(panel.lines()) == [#"{"ev":"completed","sid":"q"}"#, #"{"ev":"completed","sid":"r"}"#])
        panel.close()
        writer.close()
    }

    @Test func aKeyedSubscriptionResumesWithItsKeysChangesAfterFrom() {
        let writer = mapWriter(writing: ["a": "1"])
        let reader = harness.connect()
        let at = Self.position(in: reader.send(#"{"op":"sub","subject":"m","sid":"s","positions":true}"#)[2])
        reader.close()
        Self.write(writer, "b", "2")
        Self.write(writer, "a", "3")
        writer.send(#"{"op":"pub","subject":"m","key":"b","delete":true}"#)
        let keyed = harness.connect().send(
            #"{"op":"sub","subject":"m","sid":"k","from":"\#(at)","ops":[{"op":"filter","expr":"$key == \"b\""}]}"#)
        #expect(keyed.count == 4 && keyed[0] == #"{"ok":true,"sid":"k","resumed":true}"#)
        #expect(keyed[1].hasPrefix(#"{"ev":"next","sid":"k","key":"b","value":2,"pos":"#))
        #expect(keyed[2].hasPrefix(#"{"ev":"removed","sid":"k","key":"b","reason":"deleted","pos":"#))
        #expect(keyed[3].hasPrefix(#"{"ev":"synced","sid":"k","pos":"#))
        writer.close()
    }

    @Test func aConfiguredMapIsMadeAtStartInItsShape() throws {
        let clock = clock
        var config = ServerConfig()
        config.maxMapKeys = 50
        config.subjects = [
            SubjectDefinition(name: "hosts", kind: .map, retainMilliseconds: 30_000, maxKeys: 5),
            SubjectDefinition(name: "jobs", kind: .map, maxKeys: 50),
        ]
        let harness = SessionHarness(config: config) { _ in MemorySubjectStore(retained: RetainedValues(clock: clock)) }
        try harness.run { try harness.server.createConfiguredSubjects() }
        let client = harness.connect()
        let listed = client.send(#"{"op":"list"}"#)[0]
        #expect(listed.contains(#"{"subject":"hosts","kind":"map","ttl_s":30,"keys":0,"max_keys":5,"#))
        #expect(listed.contains(#"{"subject":"jobs","kind":"map","keys":0,"max_keys":50,"#))
        // A client's create matches it only in its shape.
        #expect(
            client.send(
                #"{"op":"create","subject":"hosts","kind":"map","ttl_s":30,"max_keys":5,"ref":1}"#,
                #"{"op":"create","subject":"hosts","kind":"map","max_keys":5,"ref":2}"#
            ).map { $0.contains(#""ok":true"#) } == [true, false])
        client.close()
    }

    @Test func aPatternGetsAMapsChangesWithSubjectAndKeyButNoSnapshot() {
        let writer = mapWriter(writing: ["a": "1"])
        let reader = harness.connect()
        #expect(reader.send(#"{"op":"sub","subject":">","sid":"p"}"#) == [#"{"ok":true,"sid":"p"}"#])
        Self.write(writer, "a", "2")
        writer.send(#"{"op":"pub","subject":"m","key":"a","delete":true}"#)
        #expect(
            reader.lines() == [
                #"{"ev":"next","sid":"p","subject":"m","key":"a","value":2}"#,
                #"{"ev":"removed","sid":"p","subject":"m","key":"a","reason":"deleted"}"#,
            ])
        reader.close()
        writer.close()
    }

    @Test func aConflatingMapSubscriptionHoldsOneChangePerKeyAndSyncedStillComes() {
        let harness = SessionSlowConsumerTests.harness()
        let writer = harness.connect()
        writer.send(#"{"op":"create","subject":"m","kind":"map"}"#)
        Self.write(writer, "a", "0")
        Self.write(writer, "b", "0")
        let reader = harness.connect()
        // The reply is written; after it the output is over the soft limit (1000 bytes).
        reader.transport.unsentPerLine = 1001
        #expect(reader.send(#"{"op":"sub","subject":"m","sid":"s","conflate":true}"#) == [#"{"ok":true,"sid":"s"}"#])
        reader.transport.unsentPerLine = 0
        for value in 1...100 {
            Self.write(writer, "a", "\(value)")
            Self.write(writer, "b", "\(value)")
        }
        writer.send(#"{"op":"pub","subject":"m","key":"b","delete":true}"#)
        #expect(reader.lines().isEmpty)
        harness.run { reader.transport.drain() }
        // The snapshot's a and b (in no order) and synced waited in order; a's and b's newer
        // changes took their places: 100 writes each and b's removal replaced what waited.
        let lines = reader.lines()
        #expect(lines.count == 4 && lines[0] == #"{"ev":"dropped","sid":"s","count":201}"#)
        #expect(Set(lines[1...2]) == [Self.next("s", "a", "100"), Self.removed("s", "b")])
        #expect(lines.last == #"{"ev":"synced","sid":"s"}"#)
        reader.close()
        writer.close()
    }
}
