import Runnel
import RunnelJSON
import RunnelProtocol
import Testing

@testable import RunnelServer

/// The parts of a clustered node that need no NATS: the cluster keys of `runneld.toml`, the
/// interest that decides which NATS subscriptions a node holds, and the `dropped` counts it
/// leaves on subscriptions (their line, with or without a count). The links themselves are
/// checked against real nats-server processes by Tests/blackbox/test_cluster.py.
@Suite struct ClusterPartsTests {
    // MARK: Configuration

    @Test func clusterKeysAreReadAndRendered() throws {
        let config = try ServerConfig.parse(
            toml: """
                cluster_nats = ["nats://127.0.0.1:4222", "tls://nats.example:4443"]
                cluster_name = "eu-west_1"
                node_name = "node-a.example"
                cluster_replicas = 3
                cluster_token = "s3cret"
                cluster_connect_timeout = 2.5
                """)
        #expect(config.cluster.isClustered)
        #expect(config.cluster.nats == ["nats://127.0.0.1:4222", "tls://nats.example:4443"])
        #expect(config.cluster.name == "eu-west_1" && config.cluster.nodeName == "node-a.example")
        #expect(config.cluster.replicas == 3 && config.cluster.connectTimeout == .milliseconds(2500))
        #expect(config.renderedValue(of: .clusterToken) == "(hidden)")
        #expect(!config.summaryLines.joined().contains("s3cret"))
        let single = try ServerConfig.parse(toml: "cluster_nats = \"nats://h:1\"")
        #expect(single.cluster.nats == ["nats://h:1"])
        let standalone = try ServerConfig.parse(toml: "cluster_nats = \"\"")
        #expect(!standalone.cluster.isClustered && !ServerConfig().cluster.isClustered)
        #expect(ClusterConfig.problem(withNodeName: ServerConfig().cluster.nodeName) == nil)
    }

    @Test(arguments: [
        ("cluster_name = \"bad name!\"", "cluster_name"),
        ("cluster_name = \"\"", "cluster_name"),
        ("cluster_name = \"\(String(repeating: "x", count: 33))\"", "cluster_name"),
        ("cluster_nats = \"http://h:1\"", "cluster_nats"),
        ("cluster_nats = [\"nats://h:1\", 4]", "cluster_nats"),
        ("cluster_nats = \"nats://a:1,b:2\"", "cluster_nats"),
        ("cluster_replicas = 6", "cluster_replicas"),
        ("cluster_connect_timeout = 0", "cluster_connect_timeout"),
        ("cluster_send_buffer_bytes = 1024", "cluster_send_buffer_bytes"),
        ("node_name = \"a b\"", "node_name"),
    ])
    func badClusterKeysAreErrorsNamingTheKey(_ line: String, _ key: String) {
        #expect {
            _ = try ServerConfig.parse(toml: line)
        } throws: { error in
            (error as? ConfigError)?.key == key
        }
    }

    @Test func aClusterKeepsDurableSubjectsWithoutADataDirectory() throws {
        let subjects = "[[subjects]]\nname = \"d\"\nkind = \"replay\"\ndurable = true\n"
        #expect(throws: ConfigError.self) { try ServerConfig.parse(toml: subjects) }
        let config = try ServerConfig.parse(toml: "cluster_nats = \"nats://h:1\"\n" + subjects)
        #expect(config.subjects.first?.durable == true && config.dataDir == nil)
    }

    @Test func clusterKeysNeedARestart() throws {
        let before = ServerConfig()
        let after = try ServerConfig.parse(toml: "cluster_nats = \"nats://h:1\"\ncluster_password = \"p\"")
        let changes = after.changes(from: before)
        #expect(changes.map(\.key) == ["cluster_nats", "cluster_password"])
        #expect(changes.allSatisfy { $0.applicability == .needsRestart })
    }

    // MARK: Interest

    @Test func oneNATSSubscriptionPerSubjectOrPatternWhileSubscribed() {
        var asked: [String] = []
        var ended: [String] = []
        var made: [String] = []
        let interest = ClusterInterest(
            subscribe: { subject in asked.append(subject) }, unsubscribe: { subject in ended.append(subject) })
        interest.subscribed = { made.append($0) }
        let plain = SubjectEntry(name: "a.b", kind: .subject, capacity: nil, initial: nil, maxReplayBytes: 1 << 20)
        let replay = SubjectEntry(name: "r", kind: .replay, capacity: 5, initial: nil, maxReplayBytes: 1 << 20)
        let first = SessionSubscription(sid: "1", entry: plain, pattern: SubjectPattern("a.b"))
        let second = SessionSubscription(sid: "2", entry: plain, pattern: SubjectPattern("a.b"))
        let pattern = SessionSubscription(sid: "3", entry: nil, pattern: SubjectPattern("a.*"))
        let retained = SessionSubscription(sid: "4", entry: replay, pattern: SubjectPattern("r"))
        for subscription in [first, second, pattern, retained] { interest.began(subscription) }
        // A retained subject's values do not cross as plain ones do: no NATS subscription.
        #expect(asked == ["a.b", "a.*"] && made == asked && interest.count == 2)
        #expect(Set(interest.keys) == ["a.b", "a.*"])
        // Which other NATS subscription brings a subject's values (`forgetSeqs`).
        #expect(interest.bringsValues(of: "a.b", besides: "a.*") && interest.bringsValues(of: "a.b", besides: "a.b"))
        #expect(interest.bringsValues(of: "a.c", besides: "a.b") && !interest.bringsValues(of: "a.c", besides: "a.*"))
        interest.ended(first)
        #expect(interest.count == 2 && ended.isEmpty)
        interest.ended(second)
        interest.ended(retained)
        #expect(interest.count == 1 && ended == ["a.b"] && interest.keys == ["a.*"])
        #expect(!interest.bringsValues(of: "a.b", besides: "a.*"))
        interest.ended(pattern)
        #expect(interest.count == 0 && ended == ["a.b", "a.*"])
    }

    @Test func missedValuesReachTheSubscriptionsTheyWouldHave() {
        let interest = ClusterInterest(subscribe: { _ in }, unsubscribe: { _ in })
        let plain = SubjectEntry(name: "a.b", kind: .subject, capacity: nil, initial: nil, maxReplayBytes: 1 << 20)
        let named = SessionSubscription(sid: "1", entry: plain, pattern: SubjectPattern("a.b"))
        let matching = SessionSubscription(sid: "2", entry: nil, pattern: SubjectPattern("a.>"))
        let other = SessionSubscription(sid: "3", entry: nil, pattern: SubjectPattern("x.*"))
        for subscription in [named, matching, other] { interest.began(subscription) }
        interest.noteMissed(3, in: "a.b")
        interest.noteMissed(2, in: "a.b")
        #expect(named.dropped == 5 && matching.dropped == 5 && other.dropped == 0)
        interest.noteMissedEverywhere()
        #expect([named, matching, other].allSatisfy { $0.dropped == SessionSubscription.unknownDropped })
        // Unknown stays unknown when a count comes after it.
        interest.noteMissed(1, in: "a.b")
        #expect(named.dropped == SessionSubscription.unknownDropped)
    }

    @Test func aDroppedEventWithoutACountWhenHowManyIsNotKnown() throws {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"sub","subject":"t","sid":"a"}"#, #"{"op":"sub","subject":"t","sid":"b"}"#)
        let session = try #require(client.transport.receiver as? Session)
        session.subscriptions["a"]!.noteDropped(nil)
        session.subscriptions["b"]!.noteDropped(4)
        let lines = client.send(#"{"op":"pub","subject":"t","value":1}"#)
        #expect(
            lines == [
                #"{"ev":"dropped","sid":"a"}"#, #"{"ev":"next","sid":"a","value":1}"#,
                #"{"ev":"dropped","sid":"b","count":4}"#, #"{"ev":"next","sid":"b","value":1}"#,
            ]
                || lines == [
                    #"{"ev":"dropped","sid":"b","count":4}"#, #"{"ev":"next","sid":"b","value":1}"#,
                    #"{"ev":"dropped","sid":"a"}"#, #"{"ev":"next","sid":"a","value":1}"#,
                ], "\(lines)")
    }

    // MARK: Definitions and changes

    @Test func subjectNamesAreKeysAndBack() {
        for name in ["a.b", "sensors.kitchen.temp", "ünï.cödé", "a=b.c:d", "x_y-z"] {
            let key = ClusterDefinition.key(of: name)
            #expect(key.utf8.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: " ") })
            #expect(ClusterDefinition.name(ofKey: key[...]) == name, "\(name) -> \(key)")
        }
        #expect(ClusterDefinition.key(of: "a=b") == "a=3Db")
        #expect(ClusterDefinition.name(ofKey: "a=4") == nil && ClusterDefinition.name(ofKey: "a b") == nil)
    }

    @Test func mapKeysAreOneSubjectTokenEachAndBack() {
        for key in ["a.b", ".", "*", ">", "a b", "=41", "é", String(repeating: "x", count: 255)] {
            let token = NATSTokenEscaping.escape(key, keepingDots: false)
            #expect(!token.isEmpty && token.utf8.allSatisfy { $0 > 0x20 && $0 < 0x80 && !".*>".utf8.contains($0) })
            #expect(NATSTokenEscaping.unescape(token[...], keepingDots: false) == key, "\(key) -> \(token)")
        }
        #expect(NATSTokenEscaping.escape("a.b", keepingDots: false) == "a=2Eb")
        // A dot is no byte of a map key's token; bytes that are not UTF-8 are no key.
        #expect(NATSTokenEscaping.unescape("a.b", keepingDots: false) == nil)
        #expect(NATSTokenEscaping.unescape("=FF", keepingDots: false) == nil)
    }

    @Test func definitionsAreWrittenAndReadBack() throws {
        let initial = try RawJSON(validating: #"{"v":[1,2]}"#)
        var definition = ClusterDefinition(
            kind: .behavior, capacity: nil, durable: true, initial: initial, epoch: "AbCd-_12")
        definition.ended = .error("gone")
        let read = try #require(ClusterDefinition(bytes: definition.bytes))
        #expect(read.kind == .behavior && read.capacity == nil && read.durable && read.epoch == "AbCd-_12")
        #expect(read.initial?.description == #"{"v":[1,2]}"# && read.ended == .error("gone"))
        let replay = ClusterDefinition(kind: .replay, capacity: 5, durable: false, initial: nil, epoch: "E")
        let back = try #require(ClusterDefinition(bytes: replay.bytes))
        #expect(back.capacity == 5 && back.ended == nil && back.initial == nil)
        let map = ClusterDefinition(
            kind: .map, capacity: nil, retainMilliseconds: 1_500, maxKeys: 7, durable: true, initial: nil, epoch: "M")
        let mapBack = try #require(ClusterDefinition(bytes: map.bytes))
        #expect(mapBack.kind == .map && mapBack.maxKeys == 7 && mapBack.retainMilliseconds == 1_500 && mapBack.durable)
        #expect(mapBack.hasShape(of: map) && !mapBack.hasShape(of: replay))
        #expect(mapBack.shape == "map (ttl_s 1.5, max_keys 7, durable)")
        // Not a definition: a replay without its capacity, a map without its max_keys, a bad
        // epoch, not JSON.
        #expect(ClusterDefinition(bytes: Array(#"{"kind":"replay","epoch":"E"}"#.utf8)) == nil)
        #expect(ClusterDefinition(bytes: Array(#"{"kind":"map","epoch":"E"}"#.utf8)) == nil)
        #expect(ClusterDefinition(bytes: Array(#"{"kind":"subject","epoch":"a b"}"#.utf8)) == nil)
        #expect(ClusterDefinition(bytes: Array("nope".utf8)) == nil)
    }

    @Test func repliesWaitForTheChangeTheyAreAbout() {
        var changes = ClusterChanges()
        var replies: [String] = []
        #expect(changes.whenAnswered { _ in replies.append("nothing pending") } != nil)
        let first = changes.begin()
        #expect(changes.whenAnswered { replies.append("first \($0?.code.rawValue ?? "ok")") } == nil)
        let second = changes.begin()
        #expect(changes.whenAnswered { replies.append("second \($0?.code.rawValue ?? "ok")") } == nil)
        #expect(changes.unanswered == 2)
        // Answered out of order: the second waits for the first.
        #expect(changes.answer(second, error: ProtocolError(.unavailable, "x")).isEmpty)
        #expect(changes.unanswered == 2)
        for reply in changes.answer(first, error: nil) { reply() }
        #expect(replies == ["first ok", "second unavailable"] && changes.unanswered == 0)
        // A change answered at once (a publish refused) gives its error to the reply after it.
        let third = changes.begin()
        _ = changes.answer(third, error: ProtocolError(.unavailable, "y"))
        changes.whenAnswered { replies.append("third \($0?.code.rawValue ?? "ok")") }?()
        #expect(replies.last == "third unavailable")
    }
}
