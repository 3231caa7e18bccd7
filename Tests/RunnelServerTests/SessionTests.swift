import Runnel
import Testing

@testable import RunnelServer

/// The session's request ops, ordering rules and disposal, in process over `MemoryTransport`
/// (the daemon-level tests in RunneldTests cover the same ground over real sockets).
@Suite struct SessionRequestTests {
    @Test func pubWithRefCountsReceiversAndWithoutRefIsSilent() {
        let harness = SessionHarness()
        let subscriber = harness.connect()
        let publisher = harness.connect()
        #expect(subscriber.send(#"{"op":"sub","subject":"a","sid":"x"}"#) == [#"{"ok":true,"sid":"x"}"#])
        #expect(publisher.send(#"{"op":"pub","subject":"a","value":{"k": 1}}"#) == [])
        #expect(
            publisher.send(#"{"op":"pub","subject":"a","value":2,"ref":"r"}"#) == [
                #"{"ok":true,"ref":"r","receivers":1}"#
            ])
        #expect(
            subscriber.lines() == [
                #"{"ev":"next","sid":"x","value":{"k": 1}}"#, #"{"ev":"next","sid":"x","value":2}"#,
            ])
    }

    @Test func replayIsWrittenAfterTheSubReply() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(
            #"{"op":"create","subject":"r","kind":"replay","capacity":2}"#, #"{"op":"pub","subject":"r","value":1}"#,
            #"{"op":"pub","subject":"r","value":2}"#, #"{"op":"pub","subject":"r","value":3}"#)
        #expect(
            client.send(#"{"op":"sub","subject":"r","ref":7}"#) == [
                #"{"ok":true,"ref":7,"sid":"s1"}"#, #"{"ev":"next","sid":"s1","value":2}"#,
                #"{"ev":"next","sid":"s1","value":3}"#,
            ])
    }

    @Test func noEventFollowsTheUnsubReply() {
        let harness = SessionHarness()
        let client = harness.connect()
        let publisher = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#)
        #expect(client.send(#"{"op":"unsub","sid":"x","ref":1}"#) == [#"{"ok":true,"ref":1}"#])
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        #expect(client.lines() == [])
        #expect(client.send(#"{"op":"unsub","sid":"x"}"#).first?.contains(#""code":"unknown_sid""#) == true)
    }

    @Test func sidRules() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#)
        #expect(client.send(#"{"op":"sub","subject":"b","sid":"x"}"#).first?.contains("duplicate_sid") == true)
        #expect(client.send(#"{"op":"sub","subject":"b","sid":""}"#).first?.contains("bad_request") == true)
        #expect(client.send(#"{"op":"sub","subject":"b"}"#) == [#"{"ok":true,"sid":"s1"}"#])
    }

    @Test func createRules() {
        let harness = SessionHarness()
        let client = harness.connect()
        #expect(client.send(#"{"op":"create","subject":"b","kind":"behavior","value":5}"#) == [#"{"ok":true}"#])
        #expect(client.send(#"{"op":"create","subject":"b","kind":"behavior","value":6}"#) == [#"{"ok":true}"#])
        #expect(client.send(#"{"op":"create","subject":"b","kind":"replay"}"#).first?.contains("kind_mismatch") == true)
        #expect(client.send(#"{"op":"create","subject":"c","kind":"plain"}"#).first?.contains("bad_request") == true)
        #expect(
            client.send(#"{"op":"create","subject":"c","kind":"subject","capacity":3}"#).first?.contains("bad_request")
                == true)
        #expect(
            client.send(#"{"op":"sub","subject":"b","sid":"v"}"#) == [
                #"{"ok":true,"sid":"v"}"#, #"{"ev":"next","sid":"v","value":5}"#,
            ])
    }

    @Test func terminationAndDeletion() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#, #"{"op":"sub","subject":"b","sid":"y"}"#)
        #expect(
            client.send(#"{"op":"error","subject":"a","message":"boom"}"#) == [
                #"{"ev":"error","sid":"x","code":"subject_error","message":"boom"}"#, #"{"ok":true}"#,
            ])
        #expect(client.send(#"{"op":"pub","subject":"a","value":1}"#).first?.contains(#""code":"terminated""#) == true)
        #expect(client.send(#"{"op":"complete","subject":"a"}"#).first?.contains(#""code":"terminated""#) == true)
        #expect(
            client.send(#"{"op":"sub","subject":"a","sid":"late"}"#) == [
                #"{"ok":true,"sid":"late"}"#, #"{"ev":"error","sid":"late","code":"subject_error","message":"boom"}"#,
            ])
        #expect(client.send(#"{"op":"delete","subject":"b"}"#) == [#"{"ev":"completed","sid":"y"}"#, #"{"ok":true}"#])
        #expect(client.send(#"{"op":"delete","subject":"b"}"#).first?.contains("unknown_subject") == true)
    }

    @Test func listAndStats() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(
            #"{"op":"create","subject":"m.r","kind":"replay","capacity":4}"#, #"{"op":"sub","subject":"m.r"}"#,
            #"{"op":"pub","subject":"m.r","value":1}"#, #"{"op":"pub","subject":"n","value":1}"#)
        let list = client.send(#"{"op":"list","prefix":"m."}"#)
        #expect(list.count == 1)
        #expect(
            list[0].hasPrefix(
                #"{"ok":true,"subjects":[{"subject":"m.r","kind":"replay","capacity":4,"subscribers":1,"published":1,"pos":""#
            ))
        #expect(list[0].hasSuffix(#":1","durable":false,"terminated":false}]}"#))
        let stats = harness.stats()
        #expect(
            stats.hasPrefix(
                #"{"ok":true,"connections":2,"subscriptions":1,"subjects":2,"timers":0,"published":2,"delivered":1,"#))
    }

    @Test func badInputGetsErrorsAndTheSessionGoesOn() {
        let harness = SessionHarness()
        let client = harness.connect(maxRequestBytes: 64)
        #expect(client.send("not json").first?.contains(#""code":"bad_json""#) == true)
        #expect(
            client.send(#"{"op":"fly","ref":"f"}"#) == [
                #"{"ok":false,"ref":"f","code":"unknown_op","message":"unknown op 'fly'"}"#
            ])
        #expect(client.send(#"{"op":"ping","ref":[1]}"#).first?.contains("bad_request") == true)
        #expect(client.send("   ") == [])
        let long = #"{"op":"pub","subject":"a","value":""# + String(repeating: "x", count: 100) + #""}"#
        #expect(client.send(long).first?.contains(#""code":"line_too_long""#) == true)
        #expect(client.send(#"{"op":"ping","ref":1}"#) == [#"{"ok":true,"ref":1}"#])
    }

    @Test func authenticationGatesEveryOtherRequest() {
        let harness = SessionHarness { $0.authTokens = ["secret"] }
        let client = harness.connect()
        #expect(client.send(#"{"op":"ping"}"#).first?.contains("unauthorized") == true)
        #expect(client.send(#"{"op":"auth","token":"wrong"}"#).first?.contains("unauthorized") == true)
        #expect(
            client.send(#"{"op":"auth","token":"secret"}"#, #"{"op":"ping"}"#) == [#"{"ok":true}"#, #"{"ok":true}"#])
    }
}

@Suite struct SessionPatternTests {
    @Test func patternSubscriptionJoinsSubjectsCreatedLaterAndNamesThem() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"pub","subject":"s.a","value":0}"#)
        #expect(client.send(#"{"op":"sub","subject":"s.>","sid":"p"}"#) == [#"{"ok":true,"sid":"p"}"#])
        #expect(
            client.send(
                #"{"op":"pub","subject":"s.b.c","value":1}"#, #"{"op":"pub","subject":"t","value":2}"#,
                #"{"op":"pub","subject":"s.a","value":3}"#) == [
                    #"{"ev":"next","sid":"p","subject":"s.b.c","value":1}"#,
                    #"{"ev":"next","sid":"p","subject":"s.a","value":3}"#,
                ])
        // A matching subject's termination does not end the pattern subscription.
        #expect(client.send(#"{"op":"complete","subject":"s.a"}"#) == [#"{"ok":true}"#])
        #expect(client.send(#"{"op":"pub","subject":"s.b.c","value":4,"ref":1}"#).count == 2)
    }

    @Test func largeValuesAreWrittenWhole() {
        let harness = SessionHarness()
        let client = harness.connect()
        let big = "\"" + String(repeating: "v", count: 10_000) + "\""
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#, #"{"op":"sub","subject":"*","sid":"p"}"#)
        #expect(
            client.send(#"{"op":"pub","subject":"a","value":"# + big + "}") == [
                #"{"ev":"next","sid":"x","value":"# + big + "}",
                #"{"ev":"next","sid":"p","subject":"a","value":"# + big + "}",
            ])
    }
}

@Suite struct SessionLifetimeTests {
    @Test func closingDisposesEverySubscriptionAndChain() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(
            #"{"op":"sub","subject":"a"}"#, #"{"op":"sub","subject":"a","ops":[{"op":"map","expr":". + 1"}]}"#,
            #"{"op":"sub","subject":"b.*"}"#, #"{"op":"sub","subject":"a","ops":[{"op":"merge","subjects":["c"]}]}"#)
        let entry = harness.server.subjects["a"]!
        #expect(entry.subject.subscriberCount == 3)
        #expect(entry.namedSubscriptions == 3)
        client.close()
        #expect(entry.subject.subscriberCount == 0)
        #expect(entry.namedSubscriptions == 0)
        #expect(harness.server.subjects["c"]!.subject.subscriberCount == 0)
        #expect(harness.server.stats.counts.subscriptions == 0)
        #expect(harness.server.connectionCount == 0)
    }

    @Test func refusedPastMaxConnectionsPerAddressWithAClosingLine() {
        let harness = SessionHarness { $0.maxConnectionsPerAddress = 1 }
        let first = harness.connect()
        let refused = harness.connect()
        #expect(
            refused.lines() == [
                #"{"ev":"closing","code":"limit","message":"too many connections from memory: the server allows 1 per address (max_connections_per_address); try again later"}"#
            ])
        #expect(refused.transport.isClosed)
        first.close()
        let next = harness.connect()
        #expect(next.send(#"{"op":"ping","ref":1}"#) == [#"{"ok":true,"ref":1}"#])
    }

    @Test func anAddressIsItsPeerWithoutThePort() {
        #expect(ConnectionAdmission.host(of: "192.0.2.7:50312") == "192.0.2.7")
        #expect(ConnectionAdmission.host(of: "[2001:db8::1]:80") == "[2001:db8::1]")
        #expect(ConnectionAdmission.host(of: "memory") == "memory")
    }

    @Test func refusedAtMaxConnectionsWithAClosingLine() {
        let harness = SessionHarness { $0.maxConnections = 1 }
        _ = harness.connect()
        let refused = harness.connect()
        #expect(
            refused.lines().first?.hasPrefix(#"{"ev":"closing","code":"limit","message":"too many connections"#) == true
        )
        #expect(refused.transport.isClosed)
        #expect(harness.server.connectionCount == 1)
    }
}
