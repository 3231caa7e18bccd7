import Logging
import Runnel
import Testing

@testable import RunnelServer

/// `ClusterPeers` on a virtual clock, its messages caught instead of sent: which plain values a
/// node sends (only what another node subscribes to, everything while it cannot tell), and how
/// long a `sub` reply waits (until every live node applied its announcement, at most
/// `ackWait`). Tests/blackbox/test_cluster.py checks the same between real nodes.
@Suite struct ClusterPeersTests {
    /// The messages a `ClusterPeers` sent, as text.
    private final class Wire {
        var sent: [(ClusterPeers.Destination, String)] = []

        func take() -> [(ClusterPeers.Destination, String)] {
            defer { sent = [] }
            return sent
        }
    }

    private let scheduler = TestScheduler()
    private let wire = Wire()
    private let peers: ClusterPeers

    init() {
        let wire = wire
        peers = ClusterPeers(instance: "a-1", nodeName: "a", scheduler: scheduler, logger: Logger(label: "test")) {
            destination, payload in wire.sent.append((destination, String(decoding: payload, as: UTF8.self)))
        }
    }

    private func from(_ name: String, _ text: String) { peers.received(Array(text.utf8), from: name) }
    private func heartbeat(_ name: String, _ text: String) { peers.heard(name, payload: Array(text.utf8)) }

    /// Link up, `names` met by their heartbeats and their (empty) sets taken, `joinAfter` passed.
    private func joined(with names: [String]) {
        peers.linkCameUp()
        for name in names {
            heartbeat(name, "u \(name)")
            from(name, "=")
            from(name, "!0")
        }
        scheduler.advance(by: ClusterPeers.joinAfter + ClusterPeers.slack)
        _ = wire.take()
    }

    @Test func aNodeAloneSendsEverythingUntilItHasHeardEveryNodeThenNothing() {
        peers.localKeys = { ["mine"] }
        peers.linkCameUp()
        let sent = wire.take()
        #expect(sent.map(\.0) == [.everyone, .everyone, .heartbeat])
        #expect(sent.map(\.1) == ["=mine", "!0", "j a"])
        #expect(peers.wants("x") && !peers.isJoined)
        scheduler.advance(by: ClusterPeers.joinAfter + ClusterPeers.slack)
        #expect(peers.isJoined && !peers.wants("x") && peers.nodes == 1)
        _ = peers.tick(linkUp: true)
        #expect(wire.take().map(\.1) == ["u a"])
    }

    @Test func aNodeMetIsAskedForItsSetAndValuesGoWhereItSubscribes() {
        peers.linkCameUp()
        _ = wire.take()
        heartbeat("b-1", "j b")
        #expect(wire.take().map { "\($0.0)" + $0.1 } == [#"node("b-1")?"#, #"node("b-1")="#, #"node("b-1")!0"#])
        scheduler.advance(by: ClusterPeers.joinAfter + ClusterPeers.slack)
        // b's set has not come: this node cannot tell what b wants, so everything goes.
        #expect(!peers.isJoined && peers.wants("anything"))
        from("b-1", "=x\np.*")
        #expect(!peers.isJoined)
        from("b-1", "!3")
        #expect(wire.take().map(\.1) == ["a3"])
        #expect(peers.isJoined && peers.wants("x") && peers.wants("p.q") && !peers.wants("p.q.r") && !peers.wants("y"))
        let version = peers.version
        from("b-1", "+4 y")
        #expect(wire.take().map { "\($0.0)" + $0.1 } == [#"node("b-1")a4"#])
        #expect(peers.wants("y") && peers.version != version)
        from("b-1", "-x")
        from("b-1", "-p.*")
        #expect(!peers.wants("x") && !peers.wants("p.q") && peers.wants("y"))
        // A later whole set replaces what was known.
        from("b-1", "=z")
        from("b-1", "!4")
        #expect(peers.wants("z") && !peers.wants("y"))
    }

    @Test func twoNodesWantingOneSubjectKeepItWantedUntilBothLeave() {
        joined(with: ["b-1", "c-1"])
        from("b-1", "+1 s")
        from("c-1", "+1 s")
        from("b-1", "-s")
        #expect(peers.wants("s"))
        from("c-1", "-s")
        #expect(!peers.wants("s"))
    }

    @Test func aSubReplyWaitsUntilEveryLiveNodeAppliedTheAnnouncement() {
        joined(with: ["b-1", "c-1"])
        let first = peers.announce(subscribed: "s")
        #expect(wire.take().map { "\($0.0)" + $0.1 } == ["everyone+1 s"])
        var answered: [UInt64] = []
        peers.whenKnown(first) { answered.append(first) }
        from("b-1", "a1")
        #expect(answered.isEmpty)
        // c acknowledges a later announcement: it applied this one before.
        let second = peers.announce(subscribed: "t")
        peers.whenKnown(second) { answered.append(second) }
        from("c-1", "a2")
        #expect(answered == [first])
        from("b-1", "a2")
        #expect(answered == [first, second])
        // Announced when no node answers: the reply goes after `ackWait`.
        let third = peers.announce(subscribed: "u")
        peers.whenKnown(third) { answered.append(third) }
        scheduler.advance(by: ClusterPeers.ackWait - .milliseconds(1))
        #expect(answered.count == 2)
        scheduler.advance(by: .milliseconds(1) + ClusterPeers.slack)
        #expect(answered == [first, second, third])
    }

    @Test func aSubReplyWaitsUntilEveryLiveNodeHasBeenHeard() {
        peers.linkCameUp()
        var answered = false
        peers.whenKnown(peers.announce(subscribed: "s")) { answered = true }
        scheduler.advance(by: .seconds(1))
        // b, heard only now, got this node's set (which holds s) on meeting it.
        heartbeat("b-1", "u b")
        #expect(wire.take().map(\.1).suffix(3) == ["?", "=", "!1"])
        scheduler.advance(by: ClusterPeers.joinAfter)
        #expect(!answered)
        from("b-1", "a1")
        #expect(answered)
    }

    @Test func aNodeThatStopsIsNotWaitedForAndASilentOneIsGivenUpThenTold() {
        joined(with: ["b-1", "c-1"])
        from("b-1", "+1 x")
        var answered = false
        peers.whenKnown(peers.announce(subscribed: "s")) { answered = true }
        from("c-1", "a1")
        heartbeat("b-1", "b b")
        #expect(answered && !peers.wants("x") && peers.nodes == 2)
        // c goes silent: given up after `aliveFor`, its subscriptions with it.
        from("c-1", "+2 y")
        scheduler.advance(by: ClusterPeers.aliveFor + .seconds(1))
        #expect(peers.tick(linkUp: true).isEmpty)
        #expect(!peers.wants("y") && peers.nodes == 1)
        _ = wire.take()
        heartbeat("c-1", "u c")
        #expect(wire.take().first.map(\.1) == "?d")
        #expect(peers.nodes == 2)
    }

    @Test func aNodeGivenUpIsForgottenAfterForgetAfter() {
        joined(with: ["b-1"])
        scheduler.advance(by: ClusterPeers.aliveFor + .seconds(1))
        #expect(peers.tick(linkUp: true).isEmpty && peers.nodes == 1)
        scheduler.advance(by: ClusterPeers.forgetAfter - .seconds(1))
        #expect(peers.tick(linkUp: true).isEmpty)
        scheduler.advance(by: .seconds(2))
        #expect(peers.tick(linkUp: true) == ["b-1"])
        #expect(peers.tick(linkUp: true).isEmpty)
        // Heard again after that, it is met as a new node.
        heartbeat("b-1", "u b")
        #expect(wire.take().first { $0.0 == .node("b-1") }?.1 == "?")
    }

    @Test func aStoppingNodeSaysGoodbye() {
        peers.sayGoodbye()
        #expect(wire.take().map { "\($0.0)" + $0.1 } == ["heartbeatb a"])
    }

    @Test func aNodeThatHadBeenGivenUpTellsItsSubscriptionsAndAnswersWithItsSet() {
        peers.localKeys = { ["k"] }
        joined(with: ["b-1"])
        var told = 0
        peers.missedEverything = { told += 1 }
        from("b-1", "?")
        #expect(told == 0 && wire.take().map(\.1) == ["=k", "!0"])
        from("b-1", "?d")
        #expect(told == 1 && wire.take().map(\.1) == ["=k", "!0"])
    }

    @Test func aLargeSetGoesInParts() {
        let keys = (0..<10_000).map { "subject.number.\($0)" }
        peers.localKeys = { keys }
        peers.linkCameUp()
        let parts = wire.take().filter { $0.0 == .everyone }.map(\.1)
        #expect(parts.count > 3 && parts.first!.hasPrefix("=") && parts.last == "!0")
        #expect(parts.dropFirst().dropLast().allSatisfy { $0.hasPrefix("&") })
        #expect(parts.allSatisfy { $0.utf8.count <= ClusterPeers.setPart })
        let received = parts.dropLast().flatMap { $0.dropFirst().split(separator: "\n").map(String.init) }
        #expect(received == keys)
    }

    @Test func aLinkComingBackSendsEverythingAgainUntilEveryNodesSetCame() {
        joined(with: ["b-1"])
        #expect(!peers.wants("x"))
        peers.linkCameUp()
        #expect(peers.wants("x") && wire.take().map(\.1).last == "j a")
        heartbeat("b-1", "u b")
        scheduler.advance(by: ClusterPeers.joinAfter + ClusterPeers.slack)
        #expect(!peers.isJoined)
        from("b-1", "=")
        from("b-1", "!0")
        #expect(peers.isJoined && !peers.wants("x"))
    }
}
