import Testing

@testable import RunnelServer

/// History by time (docs/protocol.md, "History by time"), in process, on a clock the test sets:
/// `ts` exactly as stamped, `since` at its boundary, `resumed` against evictions, `retain_s`.
@Suite struct SessionHistoryTests {
    /// A clock the test moves.
    final class ManualPublishClock: PublishClock {
        var time: Int64 = 0
        func now() -> Int64 { time }
    }

    private let clock = ManualPublishClock()
    private let harness: SessionHarness

    init() {
        let clock = clock
        harness = SessionHarness { _ in MemorySubjectStore(retained: RetainedValues(clock: clock)) }
    }

    /// Publishes `values` to `subject`, the clock at each time of `times` in turn.
    private func publish(_ client: SessionClient, _ subject: String, _ values: [Int], at times: [Int64]) {
        for (value, time) in zip(values, times) {
            clock.time = time
            client.send(#"{"op":"pub","subject":"\#(subject)","value":\#(value)}"#)
        }
    }

    @Test func eventsCarryTheTimeTheirValueWasPublishedAtAndStagesKeepIt() {
        let client = harness.connect()
        client.send(#"{"op":"create","subject":"r","kind":"replay","capacity":5}"#)
        publish(client, "r", [1, 2], at: [1_000, 2_000])
        clock.time = 9_000
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"t","ts":true}"#) == [
                #"{"ok":true,"sid":"t"}"#, #"{"ev":"next","sid":"t","value":1,"ts":1000}"#,
                #"{"ev":"next","sid":"t","value":2,"ts":2000}"#,
            ])
        // Beside a position, after it; through a computing stage, the source's; a constant, none.
        let lines = client.send(
            #"{"op":"sub","subject":"r","sid":"m","ts":true,"positions":true,"ops":[{"op":"map","expr":". + 1"}]}"#,
            #"{"op":"sub","subject":"r","sid":"c","ts":true,"ops":[{"op":"mapReplace","value":0}]}"#)
        #expect(lines[1].hasSuffix(#","value":2,"pos":"\#(lines[1].split(separator: "\"")[13])","ts":1000}"#))
        #expect(lines[2].hasSuffix(#","value":3,"pos":"\#(lines[2].split(separator: "\"")[13])","ts":2000}"#))
        #expect(Array(lines[4...]) == [#"{"ev":"next","sid":"c","value":0}"#, #"{"ev":"next","sid":"c","value":0}"#])
        // A pattern's lines, and a live value: stamped when published.
        client.send(
            #"{"op":"unsub","sid":"m"}"#, #"{"op":"unsub","sid":"c"}"#,
            #"{"op":"sub","subject":">","sid":"p","ts":true}"#)
        #expect(
            client.send(#"{"op":"pub","subject":"r","value":3}"#) == [
                #"{"ev":"next","sid":"t","value":3,"ts":9000}"#,
                #"{"ev":"next","sid":"p","subject":"r","value":3,"ts":9000}"#,
            ])
        client.close()
    }

    @Test func sinceStartsAtItsTimeAndResumedSaysWhetherAllOfItIsKept() {
        let client = harness.connect()
        client.send(#"{"op":"create","subject":"r","kind":"replay","capacity":2}"#)
        publish(client, "r", [1, 2, 3], at: [1_000, 2_000, 3_000])
        // 1 was let go (capacity 2): from its time on, not everything is kept.
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"a","since":1000}"#) == [
                #"{"ok":true,"sid":"a","resumed":false}"#, #"{"ev":"next","sid":"a","value":2}"#,
                #"{"ev":"next","sid":"a","value":3}"#,
            ])
        // From a millisecond after it, everything is; a value at exactly `since` is included.
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"b","since":1001}"#) == [
                #"{"ok":true,"sid":"b","resumed":true}"#, #"{"ev":"next","sid":"b","value":2}"#,
                #"{"ev":"next","sid":"b","value":3}"#,
            ])
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"c","since":"1970-01-01T00:00:03Z"}"#) == [
                #"{"ok":true,"sid":"c","resumed":true}"#, #"{"ev":"next","sid":"c","value":3}"#,
            ])
        client.close()
    }

    @Test func retainSLetsValuesGoByAgeBeforeAReplayAndOnTheSweep() {
        let client = harness.connect()
        #expect(
            client.send(#"{"op":"create","subject":"r","kind":"replay","capacity":10,"retain_s":1}"#) == [
                #"{"ok":true}"#
            ])
        publish(client, "r", [1, 2], at: [1_000, 2_500])
        clock.time = 2_600
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"a","since":0}"#) == [
                #"{"ok":true,"sid":"a","resumed":false}"#, #"{"ev":"next","sid":"a","value":2}"#,
            ])
        let entry = harness.server.subjects["r"]!
        #expect(entry.retainedBytes == 1)
        // Kept while exactly `retain_s` old; let go by the sweep once older.
        clock.time = 3_500
        harness.run { harness.server.subjects.retained.dropExpired() }
        #expect(entry.retainedBytes == 1)
        clock.time = 3_501
        harness.run { harness.server.subjects.retained.dropExpired() }
        #expect(entry.retainedBytes == 0)
        client.close()
    }

    @Test func aConfiguredSubjectKeepsItsRetainSAndListShowsIt() throws {
        let clock = clock
        var config = ServerConfig()
        config.subjects = [SubjectDefinition(name: "chart", kind: .replay, capacity: 10, retainMilliseconds: 1_500)]
        let harness = SessionHarness(config: config) { _ in MemorySubjectStore(retained: RetainedValues(clock: clock)) }
        try harness.run { try harness.server.createConfiguredSubjects() }
        let client = harness.connect()
        #expect(
            client.send(#"{"op":"list","prefix":"chart"}"#).first?.hasPrefix(
                #"{"ok":true,"subjects":[{"subject":"chart","kind":"replay","capacity":10,"retain_s":1.5,"#
                    + #""subscribers":0,"published":0,"pos":""#) == true)
        // A client's create matches it only with the same retain_s.
        #expect(
            client.send(#"{"op":"create","subject":"chart","kind":"replay","capacity":10,"retain_s":1.5}"#) == [
                #"{"ok":true}"#
            ])
        #expect(
            client.send(#"{"op":"create","subject":"chart","kind":"replay","capacity":10}"#).first?.contains(
                "exists as replay (capacity 10, retain_s 1.5)") == true)
        clock.time = 10_000
        client.send(#"{"op":"pub","subject":"chart","value":1}"#)
        clock.time = 11_501
        harness.run { harness.server.subjects.retained.dropExpired() }
        #expect(harness.server.subjects["chart"]!.retainedBytes == 0)
        client.close()
    }
}
