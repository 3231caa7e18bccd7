import RunnelProtocol
import Testing

@testable import RunnelServer

/// The slow-consumer policies over `MemoryTransport`s: a connection's unsent output is what
/// the test says, and the test stands in for the grace timer (`Session.graceEnded`), the
/// harness's loop never running.
@Suite struct SessionSlowConsumerTests {
    private static let closing = #"{"ev":"closing","code":"slow_consumer"}"#

    /// Soft limit 1000 bytes, hard limit 10000, a grace of 10 s (`SessionConflationTests` too).
    static func harness(_ policy: SlowConsumerPolicy = .disconnect) -> SessionHarness {
        SessionHarness {
            $0.softPendingBytes = 1000
            $0.maxPendingBytes = 10_000
            $0.softPendingSeconds = .seconds(10)
            $0.slowConsumer = policy
        }
    }

    /// A harness under `policy`, a client subscribed to `a` as `x`, and a publisher.
    private static func subscribed(_ policy: SlowConsumerPolicy = .disconnect) -> (
        SessionHarness, SessionClient, SessionClient
    ) {
        let harness = harness(policy)
        let client = harness.connect()
        let publisher = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#)
        return (harness, client, publisher)
    }

    private func session(of client: SessionClient) -> Session { client.transport.receiver as! Session }

    // MARK: The hard limit alone (max_pending_bytes set, so the soft limit is clamped to it)

    @Test func disconnectPolicyWritesClosingAndCloses() {
        let harness = SessionHarness { $0.maxPendingBytes = 100 }
        let client = harness.connect()
        let publisher = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#)
        client.transport.unsent = 101
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        #expect(client.lines() == [Self.closing])
        #expect(client.transport.isClosed)
        #expect(harness.server.subjects["a"]!.subject.subscriberCount == 0)
    }

    @Test func dropPolicyCountsWhatItDropped() {
        let harness = SessionHarness {
            $0.maxPendingBytes = 100
            $0.slowConsumer = .drop
        }
        let client = harness.connect()
        let publisher = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#)
        client.transport.unsent = 101
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#, #"{"op":"pub","subject":"a","value":2}"#)
        client.transport.unsent = 0
        publisher.send(#"{"op":"pub","subject":"a","value":3}"#)
        #expect(client.lines() == [#"{"ev":"dropped","sid":"x","count":2}"#, #"{"ev":"next","sid":"x","value":3}"#])
    }

    @Test func requestsAreHeldWhileRepliesPileUpAndHandledInOrderAfter() {
        let harness = SessionHarness { $0.maxPendingBytes = 100 }
        let client = harness.connect()
        client.transport.unsent = 101
        #expect(client.send(#"{"op":"ping","ref":1}"#) == [])
        #expect(client.transport.isInputPaused)
        harness.run { client.transport.drain() }
        #expect(client.lines() == [#"{"ok":true,"ref":1}"#])
        #expect(!client.transport.isInputPaused)
    }

    // MARK: Soft limit and grace

    @Test func theSoftLimitDefaultsToEightMiBUnderAHardLimitOfSixtyFour() {
        let config = ServerConfig()
        #expect(config.softPendingLimit == 8_388_608)
        #expect(config.maxPendingBytes == 67_108_864)
        #expect(config.softPendingSeconds == .seconds(10))
        var clamped = config
        clamped.maxPendingBytes = 4096
        #expect(clamped.softPendingLimit == 4096)
    }

    @Test func aSubscriberOverTheSoftLimitWithinTheGraceKeepsEveryValue() {
        let (harness, client, publisher) = Self.subscribed()
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        harness.run { publisher.transport.receiveReadAhead(#"{"op":"pub","subject":"a","value":2}"#) }
        #expect(session(of: client).lag?.graceTimer != nil)
        harness.run { client.transport.drain() }
        #expect(session(of: client).lag == nil)
        publisher.send(#"{"op":"pub","subject":"a","value":3}"#)
        #expect(
            client.lines() == [1, 2, 3].map { #"{"ev":"next","sid":"x","value":\#($0)}"# })
        #expect(!client.transport.isClosed)
        #expect(harness.server.stats.counts.slowConsumerDisconnects == 0)
    }

    @Test func aSubscriberStillOverTheSoftLimitWhenTheGraceEndsIsDisconnected() {
        let (harness, client, publisher) = Self.subscribed()
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        harness.run { session(of: client).graceEnded() }
        #expect(client.lines() == [#"{"ev":"next","sid":"x","value":1}"#, Self.closing])
        #expect(client.transport.isClosed)
        #expect(harness.server.stats.counts.slowConsumerDisconnects == 1)
    }

    @Test func aSubscriberPastTheHardLimitIsDisconnectedAtOnce() {
        let (harness, client, publisher) = Self.subscribed()
        defer { withExtendedLifetime(harness) {} }
        client.transport.unsent = 10_001
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        #expect(client.lines() == [Self.closing])
        #expect(client.transport.isClosed)
    }

    @Test func dropDropsOnlyOnceTheGraceHasEndedAndUntilTheOutputFalls() {
        let (harness, client, publisher) = Self.subscribed(.drop)
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        harness.run { session(of: client).graceEnded() }
        #expect(!client.transport.isClosed)
        publisher.send(#"{"op":"pub","subject":"a","value":2}"#, #"{"op":"pub","subject":"a","value":3}"#)
        harness.run { client.transport.drain() }
        publisher.send(#"{"op":"pub","subject":"a","value":4}"#)
        #expect(
            client.lines() == [
                #"{"ev":"next","sid":"x","value":1}"#, #"{"ev":"dropped","sid":"x","count":2}"#,
                #"{"ev":"next","sid":"x","value":4}"#,
            ])
        #expect(harness.server.stats.counts.dropped == 2)
    }

    @Test func dropDropsPastTheHardLimitWithinTheGrace() {
        let (harness, client, publisher) = Self.subscribed(.drop)
        defer { withExtendedLifetime(harness) {} }
        client.transport.unsent = 10_001
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":2}"#)
        #expect(
            client.lines() == [#"{"ev":"dropped","sid":"x","count":1}"#, #"{"ev":"next","sid":"x","value":2}"#])
    }

    @Test func repliesAreHeldAtTheSoftLimit() {
        let harness = Self.harness()
        let client = harness.connect()
        client.transport.unsent = 1001
        #expect(client.send(#"{"op":"ping","ref":1}"#) == [])
        #expect(client.transport.isInputPaused)
        harness.run { client.transport.drain() }
        #expect(client.lines() == [#"{"ok":true,"ref":1}"#])
    }

    // MARK: disconnect: a burst paced by the subscribers that read it

    @Test func aSubscriberThatDrainsPausesThePublisherAndLosesNothing() {
        let (harness, client, publisher) = Self.subscribed()
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        #expect(publisher.transport.isInputPaused)
        harness.run { publisher.transport.receiveReadAhead(#"{"op":"pub","subject":"a","value":2}"#) }
        // It reads between two looks, from a send buffer the kernel does not refill yet (what
        // it acknowledges grows, what the kernel took does not): the publisher stays paused.
        client.transport.acknowledged += SlowConsumerLag.drainProgress
        harness.run { session(of: client).drainCheckDue() }
        #expect(publisher.transport.isInputPaused)
        #expect(session(of: client).lag?.drainTimer != nil)
        harness.run { client.transport.drain() }
        #expect(!publisher.transport.isInputPaused)
        #expect(client.lines() == [1, 2].map { #"{"ev":"next","sid":"x","value":\#($0)}"# })
        #expect(!client.transport.isClosed)
        #expect(harness.server.publisherPauses.pauses == 1 && harness.server.publisherPauses.pausedNow == 0)
    }

    @Test func aSubscriberThatStopsReadingLetsThePublisherGoAtTheNextLookAndIsCut() {
        let (harness, client, publisher) = Self.subscribed()
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        #expect(publisher.transport.isInputPaused)
        harness.run { session(of: client).drainCheckDue() }
        #expect(!publisher.transport.isInputPaused)
        #expect(session(of: client).lag?.isStalled == true && session(of: client).lag?.drainTimer == nil)
        // Its values keep coming without pausing anyone, until the hard limit cuts it.
        publisher.send(#"{"op":"pub","subject":"a","value":2}"#)
        #expect(!publisher.transport.isInputPaused)
        client.transport.unsent = 10_001
        publisher.send(#"{"op":"pub","subject":"a","value":3}"#)
        #expect(
            client.lines() == [
                #"{"ev":"next","sid":"x","value":1}"#, #"{"ev":"next","sid":"x","value":2}"#, Self.closing,
            ])
        #expect(client.transport.isClosed)
        #expect(harness.server.publisherPauses.pauses == 1 && harness.server.publisherPauses.pausedNow == 0)
    }

    @Test func aStalledSubscriberThatReadsAgainPausesThePublisherAgain() {
        let (harness, client, publisher) = Self.subscribed()
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        harness.run { session(of: client).drainCheckDue() }
        #expect(!publisher.transport.isInputPaused)
        client.transport.sent += 100
        client.transport.acknowledged += 100
        publisher.send(#"{"op":"pub","subject":"a","value":2}"#)
        #expect(publisher.transport.isInputPaused)
        #expect(session(of: client).lag?.isStalled == false && session(of: client).lag?.drainTimer != nil)
        #expect(harness.server.publisherPauses.pauses == 2)
        harness.run { client.transport.drain() }
        #expect(!publisher.transport.isInputPaused)
        #expect(client.lines().count == 2)
    }

    @Test func aStalledSubscriberIsCutWhenTheGraceEnds() {
        let (harness, client, publisher) = Self.subscribed()
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        harness.run { session(of: client).drainCheckDue() }
        harness.run { session(of: client).graceEnded() }
        #expect(client.lines() == [#"{"ev":"next","sid":"x","value":1}"#, Self.closing])
        #expect(!publisher.transport.isInputPaused)
    }

    // MARK: backpressure

    @Test func aLookAtProgressDoesNotLetABackpressurePublisherGo() {
        let (harness, client, publisher) = Self.subscribed(.backpressure)
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        #expect(session(of: client).lag?.drainTimer == nil)
        harness.run { session(of: client).drainCheckDue() }
        #expect(publisher.transport.isInputPaused)
        harness.run { client.transport.drain() }
        #expect(!publisher.transport.isInputPaused)
    }

    @Test func aPublisherIsPausedWhileASubscriberLagsAndResumesWithoutLoss() {
        let (harness, client, publisher) = Self.subscribed(.backpressure)
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        #expect(publisher.transport.isInputPaused)
        // Lines the publisher's socket had delivered already are held, not lost.
        harness.run {
            publisher.transport.receiveReadAhead(#"{"op":"pub","subject":"a","value":2}"#)
            publisher.transport.receiveReadAhead(#"{"op":"pub","subject":"a","value":3,"ref":"r"}"#)
        }
        #expect(client.lines() == [#"{"ev":"next","sid":"x","value":1}"#])
        #expect(harness.server.publisherPauses.pausedNow == 1)
        harness.run { client.transport.drain() }
        #expect(!publisher.transport.isInputPaused)
        #expect(client.lines() == [2, 3].map { #"{"ev":"next","sid":"x","value":\#($0)}"# })
        #expect(publisher.lines() == [#"{"ok":true,"ref":"r","receivers":1}"#])
        #expect(!client.transport.isClosed)
        #expect(harness.server.publisherPauses.pauses == 1)
        #expect(harness.server.publisherPauses.pausedNow == 0)
        #expect(harness.stats().contains(#""publish_pauses":1,"publishers_paused":0,"#))
    }

    @Test func aDeadSubscriberIsCutWhenTheGraceEndsAndThePublisherGoesOn() {
        let harness = Self.harness(.backpressure)
        let client = harness.connect()
        let other = harness.connect()
        let publisher = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#)
        other.send(#"{"op":"sub","subject":"a","sid":"y"}"#)
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        #expect(publisher.transport.isInputPaused)
        harness.run { session(of: client).graceEnded() }
        #expect(client.lines() == [#"{"ev":"next","sid":"x","value":1}"#, Self.closing])
        #expect(!publisher.transport.isInputPaused)
        publisher.send(#"{"op":"pub","subject":"a","value":2}"#)
        #expect(other.lines() == [1, 2].map { #"{"ev":"next","sid":"y","value":\#($0)}"# })
    }

    @Test func aDeadSubscriberIsCutAtTheHardLimitAndThePublisherGoesOn() {
        let harness = Self.harness(.backpressure)
        let client = harness.connect()
        let publisher = harness.connect()
        let timer = harness.connect()
        client.send(#"{"op":"sub","subject":"a","sid":"x"}"#)
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"a","value":1}"#)
        #expect(publisher.transport.isInputPaused)
        // Another publisher's value finds it past the hard limit.
        client.transport.unsent = 10_001
        timer.send(#"{"op":"pub","subject":"a","value":2}"#)
        #expect(client.transport.isClosed)
        #expect(!publisher.transport.isInputPaused)
        #expect(!timer.transport.isInputPaused)
    }

    @Test func aSubjectsOwnPolicyAppliesToItsValues() {
        let harness = Self.harness(.disconnect)
        let client = harness.connect()
        let publisher = harness.connect()
        #expect(
            client.send(#"{"op":"create","subject":"b","kind":"subject","slow_consumer":"backpressure","ref":1}"#)
                == [#"{"ok":true,"ref":1}"#])
        client.send(#"{"op":"sub","subject":"b","sid":"x"}"#)
        client.transport.unsent = 2000
        publisher.send(#"{"op":"pub","subject":"b","value":1}"#)
        #expect(publisher.transport.isInputPaused)
        #expect(harness.server.subjects["b"]!.label.slowConsumer == .backpressure)
    }

    @Test func aBadSlowConsumerInCreateIsABadRequest() {
        let harness = Self.harness()
        let client = harness.connect()
        let reply = client.send(#"{"op":"create","subject":"b","kind":"subject","slow_consumer":"block","ref":1}"#)
        #expect(reply.first?.hasPrefix(#"{"ok":false,"ref":1,"code":"bad_request""#) == true)
        #expect(harness.server.subjects["b"] == nil)
    }

    @Test func subjectsTablesTakeAPolicyAndAReloadAppliesANewOne() throws {
        let parsed = try ServerConfig.parse(
            toml: """
                [[subjects]]
                name = "c"
                slow_consumer = "backpressure"
                """)
        #expect(parsed.subjects.first?.slowConsumer == .backpressure)
        #expect(throws: ConfigError.self) {
            try ServerConfig.parse(toml: "[[subjects]]\nname = \"c\"\nslow_consumer = \"block\"")
        }
        let harness = SessionHarness { $0 = parsed }
        try harness.run { try harness.server.createConfiguredSubjects() }
        #expect(harness.server.subjects["c"]!.label.slowConsumer == .backpressure)
        var reloaded = parsed
        reloaded.subjects = [SubjectDefinition(name: "c", kind: .subject, slowConsumer: .drop)]
        let changes = harness.run { harness.server.reload(reloaded) }
        #expect(changes.map(\.applicability) == [.live])
        #expect(harness.server.subjects["c"]!.label.slowConsumer == .drop)
    }
}
