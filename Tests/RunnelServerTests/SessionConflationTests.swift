import RunnelProtocol
import Testing

@testable import RunnelServer

/// Conflation (`"conflate": true` on `sub`, `slow_consumer = "conflate"`) over
/// `MemoryTransport`s: the test says what output is unsent and stands in for the grace timer
/// (`Session.graceEnded`), the harness's loop never running.
@Suite struct SessionConflationTests {
    private static let closing = #"{"ev":"closing","code":"slow_consumer"}"#

    /// A harness under `policy` (`SessionSlowConsumerTests.harness`), a client subscribed to `a`
    /// as `x` with `sub`'s extra `fields`, its output over the soft limit, and a publisher.
    private static func lagging(
        _ policy: SlowConsumerPolicy = .disconnect, subject: String = "a", fields: String = #","conflate":true"#
    ) -> (SessionHarness, SessionClient, SessionClient) {
        let harness = SessionSlowConsumerTests.harness(policy)
        let client = harness.connect()
        let publisher = harness.connect()
        client.send(#"{"op":"sub","subject":"\#(subject)","sid":"x"\#(fields)}"#)
        client.transport.unsent = 2000
        return (harness, client, publisher)
    }

    private func session(of client: SessionClient) -> Session { client.transport.receiver as! Session }

    private static func next(_ sid: String, _ value: Int) -> String {
        #"{"ev":"next","sid":"\#(sid)","value":\#(value)}"#
    }

    private static func publish(_ publisher: SessionClient, _ values: ClosedRange<Int>, to subject: String = "a") {
        for value in values { publisher.send(#"{"op":"pub","subject":"\#(subject)","value":\#(value)}"#) }
    }

    @Test func overTheSoftLimitOnlyTheLatestValueWaitsAndTheRestAreCounted() {
        let (harness, client, publisher) = Self.lagging()
        // A reader of one value in a hundred: the server holds one value for it, whatever comes.
        Self.publish(publisher, 1...1000)
        #expect(client.lines().isEmpty)
        #expect(!publisher.transport.isInputPaused)
        #expect(session(of: client).waitingToFlush.count == 1)
        harness.run { client.transport.drain() }
        #expect(client.lines() == [#"{"ev":"dropped","sid":"x","count":999}"#, Self.next("x", 1000)])
        #expect(session(of: client).lag == nil && session(of: client).waitingToFlush.isEmpty)
        Self.publish(publisher, 1001...1001)
        #expect(client.lines() == [Self.next("x", 1001)])
        #expect(harness.server.stats.counts.dropped == 999 && harness.server.stats.counts.slowConsumerDisconnects == 0)
        #expect(harness.server.publisherPauses.pauses == 0)
    }

    @Test func aSubscriptionWithoutConflateKeepsItsPolicy() {
        let (_, client, publisher) = Self.lagging(.drop, fields: #","conflate":false"#)
        Self.publish(publisher, 1...2)
        // Within the grace, `drop` writes on.
        #expect(client.lines() == [Self.next("x", 1), Self.next("x", 2)])
    }

    @Test func theConflatePolicyMakesEverySubscriptionConflate() {
        let (harness, client, publisher) = Self.lagging(.conflate, subject: "a.*", fields: "")
        Self.publish(publisher, 1...3, to: "a.b")
        harness.run { client.transport.drain() }
        #expect(
            client.lines() == [
                #"{"ev":"dropped","sid":"x","count":2}"#, #"{"ev":"next","sid":"x","subject":"a.b","value":3}"#,
            ])
    }

    @Test func aSubjectsOwnConflatePolicyAppliesToItsValues() {
        let (harness, client, publisher) = Self.lagging(subject: "b", fields: "")
        // `create` of the existing subject gives it the policy.
        #expect(
            publisher.send(#"{"op":"create","subject":"b","kind":"subject","slow_consumer":"conflate","ref":1}"#)
                == [#"{"ok":true,"ref":1}"#])
        Self.publish(publisher, 1...2, to: "b")
        #expect(!publisher.transport.isInputPaused)
        harness.run { client.transport.drain() }
        #expect(client.lines() == [#"{"ev":"dropped","sid":"x","count":1}"#, Self.next("x", 2)])
    }

    @Test func aWaitingValueGoesBeforeANewerOneOnceTheOutputHasFallen() {
        let (_, client, publisher) = Self.lagging()
        Self.publish(publisher, 1...1)
        // Under the soft limit again before the wake-up came: nothing is reordered.
        client.transport.unsent = 0
        Self.publish(publisher, 2...2)
        #expect(client.lines() == [Self.next("x", 1), Self.next("x", 2)])
    }

    @Test func aTerminalEventWritesTheWaitingValueFirst() {
        let (_, client, publisher) = Self.lagging()
        Self.publish(publisher, 1...2)
        publisher.send(#"{"op":"complete","subject":"a"}"#)
        #expect(
            client.lines() == [
                #"{"ev":"dropped","sid":"x","count":1}"#, Self.next("x", 2), #"{"ev":"completed","sid":"x"}"#,
            ])
    }

    @Test func theFlushStopsAtTheSoftLimitAndGoesOnAtTheNextDrain() {
        let harness = SessionSlowConsumerTests.harness()
        let client = harness.connect()
        let publisher = harness.connect()
        for sid in ["x", "y", "z"] {
            client.send(#"{"op":"sub","subject":"a.\#(sid)","sid":"\#(sid)","conflate":true}"#)
        }
        client.transport.unsent = 2000
        for sid in ["x", "y", "z"] { Self.publish(publisher, 1...2, to: "a.\(sid)") }
        // Each line the flush writes fills the output by 600 bytes: past the soft limit after x's
        // two lines, so y and z wait for the next drain.
        client.transport.unsentPerLine = 600
        harness.run { client.transport.drain() }
        #expect(client.lines() == [#"{"ev":"dropped","sid":"x","count":1}"#, Self.next("x", 2)])
        #expect(session(of: client).lag != nil)
        client.transport.unsentPerLine = 0
        harness.run { client.transport.drain() }
        #expect(
            client.lines() == [
                #"{"ev":"dropped","sid":"y","count":1}"#, Self.next("y", 2), #"{"ev":"dropped","sid":"z","count":1}"#,
                Self.next("z", 2),
            ])
        #expect(session(of: client).lag == nil)
    }

    @Test func aConflatingConnectionThatReadsIsNeverCutAndOneThatStopsIs() {
        let (harness, client, publisher) = Self.lagging()
        Self.publish(publisher, 1...1)
        // It took some output during the grace: another grace begins.
        client.transport.acknowledged += 100
        harness.run { session(of: client).graceEnded() }
        #expect(!client.transport.isClosed)
        #expect(session(of: client).lag?.graceTimer != nil)
        // It took nothing during that one: it is cut (its waiting value with it).
        harness.run { session(of: client).graceEnded() }
        #expect(client.lines() == [Self.closing])
        #expect(client.transport.isClosed)
        #expect(harness.server.stats.counts.slowConsumerDisconnects == 1)
    }

    @Test func conflateMustBeABoolean() {
        let harness = SessionSlowConsumerTests.harness()
        let client = harness.connect()
        let reply = client.send(#"{"op":"sub","subject":"a","sid":"x","conflate":1,"ref":1}"#)
        #expect(reply.first?.hasPrefix(#"{"ok":false,"ref":1,"code":"bad_request""#) == true)
        #expect(reply.first?.contains("conflate") == true)
    }

    @Test func slowConsumerTakesConflateInTheConfiguration() throws {
        let parsed = try ServerConfig.parse(toml: #"slow_consumer = "conflate""#)
        #expect(parsed.slowConsumer == .conflate)
    }
}
