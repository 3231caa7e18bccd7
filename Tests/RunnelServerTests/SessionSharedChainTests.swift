import Testing

@testable import RunnelServer

/// Subscriptions of one plain subject with the same stateless stages share one chain
/// (`SharedStageChain`): each value is evaluated once for all of them, a member that joins
/// late or leaves early changes nothing for the others, an evaluation error ends every
/// member, and the evaluations draw on one member's budget at a time. Anything that would
/// make a shared chain deliver other than a chain of its own gets a chain of its own.
struct SessionSharedChainTests {
    static let chain = #"[{"op":"filter","expr":".load > 0.9"},{"op":"map","expr":".p"}]"#

    static func sub(_ sid: String, subject: String = "v", ops: String = chain, extra: String = "") -> String {
        #"{"op":"sub","subject":"\#(subject)","sid":"\#(sid)","ops":\#(ops)\#(extra)}"#
    }

    static func pub(load: Double, p: String, subject: String = "v") -> String {
        #"{"op":"pub","subject":"\#(subject)","value":{"load":\#(load),"p":"\#(p)"}}"#
    }

    static func next(_ sid: String, _ p: String) -> String { #"{"ev":"next","sid":"\#(sid)","value":"\#(p)"}"# }

    static func entry(_ harness: SessionHarness, _ name: String = "v") -> SubjectEntry {
        harness.run { harness.server.subjects[name]! }
    }

    /// Two connections subscribed to `v` with `chain`, as `a` and `b`.
    static func twoMembers(_ harness: SessionHarness) -> (a: SessionClient, b: SessionClient) {
        let a = harness.connect()
        let b = harness.connect()
        a.send(Self.sub("a"))
        b.send(Self.sub("b"))
        return (a, b)
    }

    @Test func identicalChainsShareOneSubscriptionToTheSubject() {
        let harness = SessionHarness()
        let (a, b) = Self.twoMembers(harness)
        // The same stages written with other spacing are the same chain.
        b.send(
            #"{"op":"sub","subject":"v","sid":"b2","ops":[ {"op":"filter", "expr":".load > 0.9"}, {"op":"map","expr":".p"} ]}"#
        )
        let entry = Self.entry(harness)
        #expect(entry.sharedChains.count == 1)
        #expect(entry.sharedChains.values.first?.memberCount == 3)
        #expect(entry.subject.subscriberCount == 1)

        let publisher = harness.connect()
        publisher.send(Self.pub(load: 0.95, p: "x"), Self.pub(load: 0.5, p: "no"), Self.pub(load: 1, p: "y"))
        #expect(a.lines() == [Self.next("a", "x"), Self.next("a", "y")])
        #expect(b.lines() == [Self.next("b", "x"), Self.next("b2", "x"), Self.next("b", "y"), Self.next("b2", "y")])
        #expect(harness.stats().contains(#""shared_chains":{"chains":1,"subscriptions":3}"#))
    }

    @Test func aLateMemberGetsWhatFollowsAndTheChainOutlivesItsFirstMember() {
        let harness = SessionHarness()
        let a = harness.connect()
        let b = harness.connect()
        let publisher = harness.connect()
        a.send(Self.sub("a"))
        // Alone, a member's sink is subscribed to the chain straight; the second member's
        // arrival moves it to the fan-out between two values.
        #expect(Self.entry(harness).sharedChains.values.first?.isFannedOut == false)
        publisher.send(Self.pub(load: 1, p: "1"))
        b.send(Self.sub("b"))
        #expect(Self.entry(harness).sharedChains.values.first?.isFannedOut == true)
        publisher.send(Self.pub(load: 1, p: "2"))
        #expect(a.lines() == [Self.next("a", "1"), Self.next("a", "2")])
        #expect(b.lines() == [Self.next("b", "2")])

        #expect(a.send(#"{"op":"unsub","sid":"a","ref":1}"#) == [#"{"ok":true,"ref":1}"#])
        publisher.send(Self.pub(load: 1, p: "3"))
        #expect(a.lines().isEmpty)
        #expect(b.lines() == [Self.next("b", "3")])

        // The last member gone, the chain lets go of the subject and leaves it.
        #expect(harness.stats().contains(#""shared_chains":{"chains":1,"subscriptions":1}"#))
        b.close()
        let entry = Self.entry(harness)
        #expect(entry.sharedChains.isEmpty)
        #expect(harness.stats().contains(#""shared_chains":{"chains":0,"subscriptions":0}"#))
        #expect(entry.subject.subscriberCount == 0)
        // A new subscription starts a new chain.
        let c = harness.connect()
        #expect(c.send(Self.sub("c")) == [#"{"ok":true,"sid":"c"}"#])
        publisher.send(Self.pub(load: 1, p: "4"))
        #expect(c.lines() == [Self.next("c", "4")])
        #expect(entry.sharedChains.values.first?.memberCount == 1)
    }

    @Test func anEvaluationErrorEndsEveryMemberAndTheNextSubscriptionStartsAfresh() {
        let harness = SessionHarness()
        let a = harness.connect()
        let b = harness.connect()
        let ops = #"[{"op":"map","expr":".p + 1"}]"#
        a.send(Self.sub("a", ops: ops))
        b.send(Self.sub("b", ops: ops))
        _ = (a.lines(), b.lines())
        let publisher = harness.connect()
        publisher.send(#"{"op":"pub","subject":"v","value":{"p":"text"}}"#)
        let aLines = a.lines()
        #expect(aLines.count == 1)
        #expect(aLines.first?.hasPrefix(#"{"ev":"error","sid":"a","code":"eval""#) == true)
        #expect(b.lines().first?.hasPrefix(#"{"ev":"error","sid":"b","code":"eval""#) == true)
        #expect(Self.entry(harness).sharedChains.isEmpty)

        a.send(Self.sub("a2", ops: ops))
        publisher.send(#"{"op":"pub","subject":"v","value":{"p":1}}"#)
        #expect(a.lines() == [#"{"ev":"next","sid":"a2","value":2}"#])
        #expect(Self.entry(harness).sharedChains.count == 1)
        // A lone member's error takes the chain out of the entry too.
        publisher.send(#"{"op":"pub","subject":"v","value":{"p":"text"}}"#)
        #expect(a.lines().first?.hasPrefix(#"{"ev":"error","sid":"a2","code":"eval""#) == true)
        #expect(Self.entry(harness).sharedChains.isEmpty)
        #expect(Self.entry(harness).subject.subscriberCount == 0)
    }

    /// A `sub` whose stages do not compile fails and leaves no chain behind.
    @Test func aSubThatFailsToCompileLeavesNothingBehind() {
        let harness = SessionHarness()
        let client = harness.connect()
        let reply = client.send(Self.sub("bad", ops: #"[{"op":"filter","expr":".load >"}]"#)).first ?? ""
        #expect(reply.contains(#""code":"bad_expr""#), "\(reply)")
        #expect(Self.entry(harness).sharedChains.isEmpty)
    }

    @Test func aDeletedSubjectCompletesEveryMemberAndTheChainGoes() {
        let harness = SessionHarness()
        let (a, b) = Self.twoMembers(harness)
        let entry = Self.entry(harness)
        harness.connect().send(#"{"op":"delete","subject":"v"}"#)
        #expect(a.lines() == [#"{"ev":"completed","sid":"a"}"#])
        #expect(b.lines() == [#"{"ev":"completed","sid":"b"}"#])
        #expect(entry.sharedChains.isEmpty)
        #expect(entry.subject.subscriberCount == 0)
        #expect(harness.stats().contains(#""shared_chains":{"chains":0,"subscriptions":0}"#))
    }

    /// Budgets of a single step: each member's pays for one evaluation (which overdraws it),
    /// and the chain moves on to the next member's. With chains of their own, each member
    /// would have received one value.
    @Test func evaluationsDrawOnOneMembersBudgetAtATimeUntilAllAreSpent() {
        let harness = SessionHarness { config in
            config.maxEvalStepsPerSecond = 1
            config.maxEvalStepsBurst = 1
        }
        let ops = #"[{"op":"map","expr":".p"}]"#
        let members = (0..<3).map { _ in harness.connect() }
        for (index, member) in members.enumerated() {
            member.send(Self.sub("m\(index)", ops: ops))
            _ = member.lines()
        }
        let publisher = harness.connect()
        for k in 1...4 { publisher.send(#"{"op":"pub","subject":"v","value":{"p":\#(k)}}"#) }
        for (index, member) in members.enumerated() {
            #expect(
                member.lines() == (1...3).map { #"{"ev":"next","sid":"m\#(index)","value":\#($0)}"# }
                    + [#"{"ev":"error","sid":"m\#(index)","code":"eval","message":"limit","stage":0}"#])
        }
        #expect(SessionEvaluationBudgetTests.refused(harness) == #"{"connection":1,"token":0,"publish":0}"#)
    }

    /// A member that leaves stops paying: the next member's budget is drawn on.
    @Test func aPayerThatLeavesHandsThePayingOn() {
        let harness = SessionHarness { config in
            config.maxEvalStepsPerSecond = 1
            config.maxEvalStepsBurst = 1
        }
        let ops = #"[{"op":"map","expr":".p"}]"#
        let a = harness.connect()
        let b = harness.connect()
        a.send(Self.sub("a", ops: ops))
        b.send(Self.sub("b", ops: ops))
        _ = (a.lines(), b.lines())
        a.close()
        let publisher = harness.connect()
        publisher.send(#"{"op":"pub","subject":"v","value":{"p":1}}"#)
        publisher.send(#"{"op":"pub","subject":"v","value":{"p":2}}"#)
        // `a`'s unspent budget is not drawn on after it left.
        #expect(
            b.lines() == [
                #"{"ev":"next","sid":"b","value":1}"#,
                #"{"ev":"error","sid":"b","code":"eval","message":"limit","stage":0}"#,
            ])
    }

    @Test func subscriptionsAChainOfTheirOwnWouldServeDifferentlyAreNotShared() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(
            #"{"op":"create","subject":"r","kind":"replay","capacity":2}"#,
            #"{"op":"create","subject":"b","kind":"behavior","value":{"load":1,"p":"first"}}"#)
        let cases: [(subject: String, ops: String, extra: String)] = [
            ("r", Self.chain, ""),  // replays to each new subscription
            ("b", Self.chain, ""),  // replays its value to each new subscription
            ("v", #"[{"op":"take","count":5}]"#, ""),  // counts from its subscription
            ("v", #"[{"op":"map","expr":".p"},{"op":"distinctUntilChanged"}]"#, ""),
            ("v", Self.chain, #","from":"x:0""#),  // resumes
        ]
        for (index, shape) in cases.enumerated() {
            client.send(Self.sub("s\(index)a", subject: shape.subject, ops: shape.ops, extra: shape.extra))
            client.send(Self.sub("s\(index)b", subject: shape.subject, ops: shape.ops, extra: shape.extra))
        }
        client.send(#"{"op":"sub","subject":"v.*","sid":"pa","ops":\#(Self.chain)}"#)
        client.send(#"{"op":"sub","subject":"v.*","sid":"pb","ops":\#(Self.chain)}"#)
        for name in ["r", "b", "v"] { #expect(Self.entry(harness, name).sharedChains.isEmpty, "\(name)") }
        #expect(Self.entry(harness, "b").subject.subscriberCount == 2)
    }
}
