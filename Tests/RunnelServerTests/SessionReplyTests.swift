import RunnelProtocol
import Testing

@testable import RunnelHTTP
@testable import RunnelServer

/// Every reply reaches the transport as a value (`SessionReply`) beside its line, and the line
/// is the one the value encodes, byte for byte as the protocol has it: each op's reply, a
/// failure, the replies that wait for the disk behind a cork, and the HTTP answers that write
/// the same reply.
@Suite struct SessionReplyTests {
    /// A reply's value as text a test compares: its outcome, its members, its ref.
    private static func summary(_ reply: SessionReply?) -> String? {
        guard let reply else { return nil }
        let ref = reply.ref.map { " ref \($0)" } ?? ""
        switch reply.outcome {
        case .done: return "done" + ref
        case .published(let receivers): return "published \(receivers)" + ref
        case .subscribed(let sid, let resumed): return "subscribed \(sid) \(resumed.map(String.init) ?? "-")" + ref
        case .subjects(let listings): return "subjects \(listings.map(\.label.name).joined(separator: ","))" + ref
        case .stats(let report):
            return
                "stats \(report.connections) \(report.figures.subjects?.count ?? 0) \(report.figures.counts.published)"
                + ref
        case .failed(let error): return "failed \(error.code.rawValue)" + ref
        }
    }

    /// Sends `request` and checks it was answered by `line` alone (after `before`, the events
    /// it caused first, and before `following`, those it caused after), with one reply value,
    /// `value`.
    private func expect(
        _ client: SessionClient, _ request: String, answers line: String, value: String, after before: [String] = [],
        followedBy following: [String] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let count = client.transport.replies.count
        #expect(client.send(request) == before + [line] + following, sourceLocation: sourceLocation)
        #expect(client.transport.replies.count == count + 1, sourceLocation: sourceLocation)
        #expect(Self.summary(client.transport.replies.last) == value, sourceLocation: sourceLocation)
    }

    @Test func eachOpsReplyIsAValueBesideItsLine() {
        let harness = SessionHarness()
        let client = harness.connect()
        expect(client, #"{"op":"ping"}"#, answers: #"{"ok":true}"#, value: "done")
        expect(client, #"{"op":"ping","ref":1}"#, answers: #"{"ok":true,"ref":1}"#, value: "done ref 1")
        expect(
            client, #"{"op":"create","subject":"a","kind":"replay","capacity":2,"ref":"c"}"#,
            answers: #"{"ok":true,"ref":"c"}"#, value: "done ref \"c\"")
        expect(
            client, #"{"op":"sub","subject":"a","sid":"x","ref":2.50}"#, answers: #"{"ok":true,"ref":2.50,"sid":"x"}"#,
            value: "subscribed x - ref 2.50")
        expect(client, #"{"op":"sub","subject":"a"}"#, answers: #"{"ok":true,"sid":"s1"}"#, value: "subscribed s1 -")
        expect(
            client, #"{"op":"pub","subject":"a","value":1,"ref":"\u0070"}"#,
            answers: #"{"ok":true,"ref":"\u0070","receivers":2}"#, value: "published 2 ref \"\\u0070\"",
            after: [#"{"ev":"next","sid":"x","value":1}"#, #"{"ev":"next","sid":"s1","value":1}"#])
        expect(client, #"{"op":"unsub","sid":"x","ref":3}"#, answers: #"{"ok":true,"ref":3}"#, value: "done ref 3")
        expect(
            client, #"{"op":"complete","subject":"a","ref":4}"#, answers: #"{"ok":true,"ref":4}"#, value: "done ref 4",
            after: [#"{"ev":"completed","sid":"s1"}"#])
        expect(client, #"{"op":"create","subject":"b","kind":"subject"}"#, answers: #"{"ok":true}"#, value: "done")
        expect(
            client, #"{"op":"error","subject":"b","message":"m","ref":5}"#, answers: #"{"ok":true,"ref":5}"#,
            value: "done ref 5")
        expect(client, #"{"op":"delete","subject":"b","ref":6}"#, answers: #"{"ok":true,"ref":6}"#, value: "done ref 6")
        expect(
            client, #"{"op":"unsub","sid":"x","ref":7}"#,
            answers: #"{"ok":false,"ref":7,"code":"unknown_sid","message":"no subscription 'x' on this connection"}"#,
            value: "failed unknown_sid ref 7")
        expect(
            client, #"{"op":"nope"}"#, answers: #"{"ok":false,"code":"unknown_op","message":"unknown op 'nope'"}"#,
            value: "failed unknown_op")
    }

    @Test func aSubThatResumesSaysSoInItsValue() throws {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(
            #"{"op":"create","subject":"r","kind":"replay","capacity":4}"#, #"{"op":"pub","subject":"r","value":1}"#)
        let epoch = try #require(harness.server.subjects["r"]).position.description.split(separator: ":")[0]
        expect(
            client, #"{"op":"sub","subject":"r","sid":"a","from":"\#(epoch):1"}"#,
            answers: #"{"ok":true,"sid":"a","resumed":true}"#, value: "subscribed a true")
        expect(
            client, #"{"op":"sub","subject":"r","sid":"b","from":"other:5"}"#,
            answers: #"{"ok":true,"sid":"b","resumed":false}"#, value: "subscribed b false",
            followedBy: [#"{"ev":"next","sid":"b","value":1,"pos":"\#(epoch):1"}"#])
    }

    @Test func listRepliesWithItsEntries() throws {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(
            #"{"op":"create","subject":"q.r","kind":"replay","capacity":2}"#,
            #"{"op":"pub","subject":"q.r","value":1}"#,
            #"{"op":"create","subject":"q.s","kind":"subject"}"#, #"{"op":"complete","subject":"q.s"}"#,
            #"{"op":"create","subject":"z","kind":"subject"}"#)
        let r = try #require(harness.server.subjects["q.r"]).position.description
        let s = try #require(harness.server.subjects["q.s"]).position.description
        expect(
            client, #"{"op":"list","prefix":"q.","ref":8}"#,
            answers: #"{"ok":true,"ref":8,"subjects":["#
                + #"{"subject":"q.r","kind":"replay","capacity":2,"subscribers":0,"published":1,"pos":"\#(r)","#
                + #""durable":false,"terminated":false},"#
                + #"{"subject":"q.s","kind":"subject","subscribers":0,"published":0,"pos":"\#(s)","#
                + #""durable":false,"terminated":true}]}"#,
            value: "subjects q.r,q.s ref 8")
        expect(client, #"{"op":"list","prefix":"none"}"#, answers: #"{"ok":true,"subjects":[]}"#, value: "subjects ")
    }

    @Test func statsRepliesWithItsReport() throws {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#, #"{"op":"pub","subject":"a","value":1}"#)
        let line = try #require(client.send(#"{"op":"stats","ref":9}"#).first)
        guard case .stats(let report) = client.transport.replies.last?.outcome else {
            Issue.record("no stats value")
            return
        }
        // What the test did is in the value; the figures it cannot know are read from it.
        let counts = report.figures.counts
        let turns = report.turns
        #expect(report.connections == 1 && counts.subscriptions == 1 && report.figures.subjects?.count == 1)
        #expect(
            counts.published == 1 && counts.delivered == 1 && counts.bytesIn > 0
                && report.figures.subjects?.journal == nil)
        let expected =
            #"{"ok":true,"ref":9,"connections":1,"subscriptions":1,"subjects":1,"timers":\#(report.figures.timers),"#
            + #""published":1,"delivered":1,"dropped":0,"slow_consumer_disconnects":0,"publish_pauses":0,"#
            + #""publishers_paused":0,"publish_paused_ms":0,"bytes_in":\#(counts.bytesIn),"#
            + #""bytes_out":\#(counts.bytesOut),"uptime_s":\#(report.uptimeSeconds),"retained_bytes":0,"#
            + #""shared_chains":{"chains":0,"subscriptions":0},"#
            + #""eval_refused":{"connection":0,"token":0,"publish":0},"#
            + #""loop":{"turns":\#(turns.turns),"turn_p50_us":\#(turns.quantileMicroseconds(0.5)),"#
            + #""turn_p99_us":\#(turns.quantileMicroseconds(0.99)),"turn_max_us":\#(turns.longestNanoseconds / 1000)},"#
            + #""loops":1,"compression":{"websockets":0,"event_streams":0,"#
            + #""memory_bytes":\#(report.compressionMemoryBytes)}}"#
        #expect(line == expected)
    }

    @Test func authRepliesAreValuesToo() throws {
        let config = try ServerConfig.parse(toml: #"auth_tokens = ["t"]"#)
        let harness = SessionHarness { $0 = config }
        let client = harness.connect()
        expect(
            client, #"{"op":"ping","ref":1}"#,
            answers: #"{"ok":false,"ref":1,"code":"unauthorized","message":"#
                + #""authenticate first with {\"op\":\"auth\",\"token\":...}"}"#,
            value: "failed unauthorized ref 1")
        expect(
            client, #"{"op":"auth","token":"x","ref":2}"#,
            answers: #"{"ok":false,"ref":2,"code":"unauthorized","message":"invalid token"}"#,
            value: "failed unauthorized ref 2")
        expect(client, #"{"op":"auth","token":"t","ref":3}"#, answers: #"{"ok":true,"ref":3}"#, value: "done ref 3")
    }

    /// A harness whose store's replies wait for a disk the test drives (`DiskWaitingStore`).
    private static func waitingForTheDisk(in directory: DurableStoreTests.TemporaryDirectory) throws -> (
        SessionHarness, DiskWaitingStore
    ) {
        var disk: DiskWaitingStore?
        let harness = try SessionHarness { scheduler in
            let store = DiskWaitingStore(
                try DurableSubjectStore(
                    directory: directory.path, fsync: .everysec, scheduler: scheduler, logger: SessionHarness.logger))
            disk = store
            return store
        }
        return (harness, try #require(disk))
    }

    /// Under a disk that replies wait for, each reply is held in its place, then handed on
    /// with its value; a failed write replies with its error.
    @Test func aReplyWaitingForTheDiskIsHandedOnWithItsValue() throws {
        let directory = DurableStoreTests.TemporaryDirectory()
        defer { directory.remove() }
        let (harness, store) = try Self.waitingForTheDisk(in: directory)
        let client = harness.connect()
        #expect(
            client.send(#"{"op":"create","subject":"d","kind":"replay","capacity":2,"durable":true,"ref":1}"#) == [])
        #expect(client.send(#"{"op":"sub","subject":"d","sid":"x"}"#, #"{"op":"ping","ref":2}"#) == [])
        #expect(client.transport.replies.isEmpty)
        harness.run { store.commit() }
        #expect(client.lines() == [#"{"ok":true,"ref":1}"#, #"{"ok":true,"sid":"x"}"#, #"{"ok":true,"ref":2}"#])
        #expect(client.transport.replies.map(Self.summary) == ["done ref 1", "subscribed x -", "done ref 2"])

        // The value goes out at once (the store underneath keeps it at once); the reply waits,
        // and counts the receivers once written.
        #expect(
            client.send(#"{"op":"pub","subject":"d","value":7,"ref":"p"}"#) == [#"{"ev":"next","sid":"x","value":7}"#])
        let bytesOut = harness.server.stats.counts.bytesOut
        harness.run { store.commit() }
        #expect(client.lines() == [#"{"ok":true,"ref":"p","receivers":1}"#])
        // Counted in bytes_out once written, like any other line.
        #expect(
            harness.server.stats.counts.bytesOut - bytesOut
                == UInt64(#"{"ok":true,"ref":"p","receivers":1}"#.utf8.count + 1))
        #expect(Self.summary(client.transport.replies.last) == "published 1 ref \"p\"")

        #expect(client.send(#"{"op":"delete","subject":"d","ref":3}"#) == [#"{"ev":"completed","sid":"x"}"#])
        harness.run { store.commit(failing: ProtocolError(.storage, "disk full")) }
        #expect(client.lines() == [#"{"ok":false,"ref":3,"code":"storage","message":"disk full"}"#])
        #expect(harness.server.stats.counts.requestErrors[.storage] == 1)
        #expect(Self.summary(client.transport.replies.last) == "failed storage ref 3")
        client.close()
        store.close()
    }

    /// A `pub` that made its subject (`auto_create`) is answered once the making is answered,
    /// with its error when it failed (in a cluster: another node defined the name in another
    /// shape first, so the value did not reach the cluster's subject); a later one at once.
    @Test func aPubThatMadeItsSubjectIsAnsweredWhenTheMakingIs() throws {
        let directory = DurableStoreTests.TemporaryDirectory()
        defer { directory.remove() }
        let (harness, store) = try Self.waitingForTheDisk(in: directory)
        let client = harness.connect()
        #expect(client.send(#"{"op":"pub","subject":"new","value":1,"ref":1}"#) == [])
        harness.run { store.commit(failing: ProtocolError(.kindMismatch, "subject 'new' exists as replay")) }
        #expect(
            client.lines() == [
                #"{"ok":false,"ref":1,"code":"kind_mismatch","message":"subject 'new' exists as replay"}"#
            ])
        #expect(
            client.send(#"{"op":"pub","subject":"new","value":2,"ref":2}"#) == [#"{"ok":true,"ref":2,"receivers":0}"#])
        #expect(client.send(#"{"op":"pub","subject":"other","value":3,"ref":3}"#) == [])
        harness.run { store.commit() }
        #expect(client.lines() == [#"{"ok":true,"ref":3,"receivers":0}"#])
        client.close()
        store.close()
    }

    @Test func httpAnswersWriteTheSameReply() {
        var published = ServerLineWriter.reply(SessionReply(ref: nil, .published(receivers: 3)))
        #expect(String(decoding: published.finish(), as: UTF8.self) == #"{"ok":true,"receivers":3}"#)
        let failure = HTTPResponse.failure(HTTPFailure(.badJSON, "no")) { $0.member("published", integer: 2) }
        #expect(
            String(decoding: failure.body, as: UTF8.self)
                == #"{"ok":false,"code":"bad_json","message":"no","published":2}"#)
        #expect(failure.status == HTTPStatus(reporting: .badJSON))
    }
}
