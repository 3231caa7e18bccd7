import Testing

@testable import RunnelServer

/// Durable maps in process, over a real SQLite file (`fsync = everysec`): keys, removals, seq
/// and shape across a clean stop, keys that expire while stopped journalled as removed, and a
/// `[[subjects]]` map that must agree with the stored one.
@Suite struct DurableMapTests {
    private let clock = SessionHistoryTests.ManualPublishClock()

    private func open(_ directory: String, config: ServerConfig = ServerConfig()) throws -> SessionHarness {
        let clock = clock
        return try SessionHarness(config: config) { scheduler in
            try DurableSubjectStore(
                directory: directory, fsync: .everysec, scheduler: scheduler, logger: SessionHarness.logger,
                retained: RetainedValues(clock: clock))
        }
    }

    private func lines(_ harness: SessionHarness, _ requests: String...) -> [String] {
        let client = harness.connect()
        defer { client.close() }
        return requests.flatMap { client.send($0) }
    }

    @Test func aDurableMapKeepsItsKeysSeqAndShapeAcrossACleanStop() throws {
        let directory = DurableStoreTests.TemporaryDirectory()
        defer { directory.remove() }
        clock.time = 1_000
        var harness = try open(directory.path)
        _ = lines(
            harness, #"{"op":"create","subject":"m","kind":"map","durable":true,"max_keys":5,"ttl_s":60}"#,
            #"{"op":"pub","subject":"m","key":"a","value":1}"#, #"{"op":"pub","subject":"m","key":"b","value":2}"#,
            #"{"op":"pub","subject":"m","key":"b","delete":true}"#, #"{"op":"pub","subject":"m","key":"a","value":3}"#)
        let before = lines(harness, #"{"op":"list"}"#)[0]
        harness.server.subjects.close()
        harness = try open(directory.path)
        let after = lines(harness, #"{"op":"list"}"#)[0]
        #expect(
            after.contains(#""ttl_s":60,"keys":1,"max_keys":5"#) && after.contains(#""pos":"\#(position(before))""#))
        #expect(after.contains(#""durable":true"#))
        #expect(
            lines(harness, #"{"op":"sub","subject":"m","sid":"s","positions":true}"#) == [
                #"{"ok":true,"sid":"s"}"#, #"{"ev":"next","sid":"s","key":"a","value":3,"pos":"\#(epoch(before)):4"}"#,
                #"{"ev":"synced","sid":"s","pos":"\#(epoch(before)):4"}"#,
            ])
        #expect(
            lines(harness, #"{"op":"create","subject":"m","kind":"map","max_keys":5,"ttl_s":60,"ref":1}"#)[0].contains(
                "map (ttl_s 60, max_keys 5, durable)"))
        harness.server.subjects.close()
    }

    @Test func keysThatExpiredWhileStoppedAreRemovedAndStayRemoved() throws {
        let directory = DurableStoreTests.TemporaryDirectory()
        defer { directory.remove() }
        clock.time = 1_000
        var harness = try open(directory.path)
        _ = lines(
            harness, #"{"op":"create","subject":"m","kind":"map","durable":true,"ttl_s":2}"#,
            #"{"op":"pub","subject":"m","key":"a","value":1}"#)
        harness.server.subjects.close()
        clock.time = 10_000
        harness = try open(directory.path)
        let expired = lines(harness, #"{"op":"list"}"#)[0]
        #expect(expired.contains(#""keys":0"#) && expired.hasSuffix(#":2","durable":true,"terminated":false}]}"#))
        harness.server.subjects.close()
        harness = try open(directory.path)
        #expect(lines(harness, #"{"op":"list"}"#)[0] == expired)
        harness.server.subjects.close()
    }

    /// The position in a `list` reply's first entry.
    private func position(_ list: String) -> String {
        String(list.split(separator: #""pos":""#)[1].prefix { $0 != "\"" })
    }

    private func epoch(_ list: String) -> String { String(position(list).split(separator: ":")[0]) }

    @Test func aConfiguredMapMustAgreeWithTheStoredOne() throws {
        let directory = DurableStoreTests.TemporaryDirectory()
        defer { directory.remove() }
        var harness = try open(directory.path)
        _ = lines(harness, #"{"op":"create","subject":"m","kind":"map","durable":true,"max_keys":5}"#)
        harness.server.subjects.close()
        var config = ServerConfig()
        for (maxKeys, agrees) in [(6, false), (5, true)] {
            config.subjects = [SubjectDefinition(name: "m", kind: .map, maxKeys: maxKeys, durable: true)]
            harness = try open(directory.path, config: config)
            let outcome = Result { try harness.run { try harness.server.createConfiguredSubjects() } }
            if agrees {
                #expect(throws: Never.self) { try outcome.get() }
            } else {
                #expect(throws: SubjectConflict.self) { try outcome.get() }
                #expect(
                    "\(outcome)".contains(
                        "is m (map, max_keys 6, durable), but the subject kept in data_dir is map (max_keys 5, durable)"
                    ))
            }
            harness.server.subjects.close()
        }
    }
}
