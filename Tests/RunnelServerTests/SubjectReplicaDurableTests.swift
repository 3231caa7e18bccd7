import Runnel
import RunnelTestSupport
import RunnelUV
import Testing

@testable import RunnelServer

/// Durable subjects read and written from a loop that does not own them (decision 0011): the
/// owner (loop 0) keeps the journal, over real SQLite files with `fsync = always`, so a value
/// reaches subscribers and a reply comes only once the value is on disk, on whichever loop they
/// are. What loop 1 wrote is there after a restart, at the same positions. Cross-thread: CI
/// runs these under the thread sanitizer.
@Suite struct SubjectReplicaDurableTests {
    @Test func aReadingLoopWritesAndReadsADurableSubjectThatSurvivesARestart() throws {
        let directory = DurableStoreTests.TemporaryDirectory()
        defer { directory.remove() }
        var servers = try Self.servers(over: directory.path)
        let client = servers[1].connect()
        #expect(
            servers[1].ask(
                client, #"{"op":"create","subject":"r","kind":"replay","capacity":3,"durable":true,"ref":"c"}"#,
                ref: "c") == #"{"ok":true,"ref":"c"}"#)
        let subscriber = servers[1].connect()
        // Subscribed before the first `pub`, which counts it among its receivers.
        let answered = servers[1].send(subscriber, #"{"op":"sub","subject":"r","sid":"a","positions":true}"#)
        #expect(
            (answered.isEmpty ? servers[1].lines(of: subscriber, count: 1) : answered) == [#"{"ok":true,"sid":"a"}"#])
        for index in 1...4 {
            #expect(
                servers[1].ask(
                    client, #"{"op":"pub","subject":"r","value":\#(index),"ref":"p\#(index)"}"#, ref: "p\(index)")
                    == #"{"ok":true,"ref":"p\#(index)","receivers":1}"#)
        }
        let live = servers[1].lines(of: subscriber, count: 4)
        #expect(live?.map(Self.value) == ["1", "2", "3", "4"])
        // On disk: the journal's figures, from the owner, whichever loop is asked.
        let stats = servers[1].ask(client, #"{"op":"stats","ref":"s"}"#, ref: "s")
        #expect(stats?.contains(#""durable":{"queue":0,"#) == true)
        Self.stop(servers)

        servers = try Self.servers(over: directory.path)
        defer { Self.stop(servers) }
        let again = servers[1].connect()
        let position = live?[1].components(separatedBy: #""pos":""#).last?.prefix { $0 != "\"" }
        servers[1].send(again, #"{"op":"sub","subject":"r","sid":"b","positions":true,"from":"\#(position ?? "")"}"#)
        let resumed = servers[1].lines(of: again, count: 3)
        #expect(resumed?.first == #"{"ok":true,"sid":"b","resumed":true}"#)
        // After the value at `position` (the second), the ones kept: the third and fourth, at
        // the positions they had before the restart.
        #expect(resumed?.dropFirst().map(Self.value) == ["3", "4"])
        #expect(resumed?.last == live?.last?.replacingOccurrences(of: #""sid":"a""#, with: #""sid":"b""#))
    }

    /// A `pub` and a `complete` whose replies wait for the disk are answered before their own
    /// connection's events, on a reading loop as on the owner's (the reply's place comes first
    /// there, the events once the write is done), where one answered at once comes after them
    /// (`SubjectReplicaReplyOrderTests`).
    @Test func aReplyThatWaitedForTheDiskComesBeforeItsOwnEvents() throws {
        let directory = DurableStoreTests.TemporaryDirectory()
        defer { directory.remove() }
        let servers = try Self.servers(over: directory.path)
        defer { Self.stop(servers) }
        for loop in 0..<2 {
            let client = servers[loop].connect()
            servers[loop].send(
                client, #"{"op":"create","subject":"d\#(loop)","kind":"replay","capacity":3,"durable":true}"#,
                #"{"op":"sub","subject":"d\#(loop)","sid":"a"}"#)
            #expect(servers[loop].ask(client, #"{"op":"ping","ref":"ready"}"#, ref: "ready") != nil)
            var lines = servers[loop].send(client, #"{"op":"pub","subject":"d\#(loop)","value":1,"ref":1}"#)
            lines += servers[loop].lines(of: client, count: 2 - lines.count) ?? []
            #expect(
                lines == [#"{"ok":true,"ref":1,"receivers":1}"#, #"{"ev":"next","sid":"a","value":1}"#], "loop \(loop)")
            lines = servers[loop].send(client, #"{"op":"complete","subject":"d\#(loop)","ref":2}"#)
            lines += servers[loop].lines(of: client, count: 2 - lines.count) ?? []
            #expect(lines == [#"{"ok":true,"ref":2}"#, #"{"ev":"completed","sid":"a"}"#], "loop \(loop)")
        }
    }

    private static func servers(over directory: String) throws -> LoopServers {
        try LoopServers(count: 2) { scheduler in
            try DurableSubjectStore(
                directory: directory, fsync: .always, scheduler: scheduler, logger: SessionHarness.logger)
        } _: {
            $0.dataDir = directory
        }
    }

    /// Closes the owner's journal (a clean stop) and shuts the loops down.
    private static func stop(_ servers: LoopServers) {
        servers[0].run { servers[0].server.value.subjects.close() }
        servers.shutdown()
    }

    /// What a `next` line's value is.
    private static func value(_ line: String) -> String {
        line.components(separatedBy: #""value":"#).last.map { String($0.prefix { $0 != "," && $0 != "}" }) } ?? ""
    }
}
