import Runnel
import RunnelProtocol
import RunnelTestSupport
import Testing

@testable import RunnelServer

/// A loop too busy to take its replicas' values is a lagging subscriber to their owner
/// (decision 0011, `ReaderLink`): once the values handed to it and not yet delivered pass the
/// soft limit, a value of a later turn applies its subject policy to the whole loop. Under
/// `backpressure` and `disconnect` the publisher is paused until the loop catches up, and
/// nothing is lost; under `drop` the loop misses the values, and its subscribers are told how
/// many before the next. Loop 0 owns the
/// subjects; loop 1's thread is held in one turn (`LoopServer.hold`) while loop 0 publishes.
/// Cross-thread: CI runs these under the thread sanitizer.
@Suite struct SubjectReplicaFlowTests {
    /// 200 bytes of value: each weighs 264 in the backlog (`ReplicatedValue.weight`), so four
    /// handed over pass a soft limit of 1,000.
    private static func pub(_ index: Int) -> String {
        #"{"op":"pub","subject":"s","value":"\#(index)\#(String(repeating: "x", count: 198 - String(index).count))"}"#
    }

    @Test func aBusyLoopPausesThePublisherUnderBackpressureAndMissesNothing() {
        let servers = Self.servers(.backpressure)
        defer { servers.shutdown() }
        let subscriber = Self.subscribe(on: servers[1])
        let (publisher, release) = Self.publishFourWhileHeld(servers)
        servers[0].send(publisher, (5...20).map(Self.pub))
        // Held by the loop, not by its subscriber: that one has written everything it was given.
        #expect(Self.pausedPublishers(on: servers[0]) == 1)
        #expect(servers[0].run { publisher.transport.isInputPaused })
        release()
        #expect(eventually { Self.pausedPublishers(on: servers[0]) == 0 })
        let lines = servers[1].lines(of: subscriber, count: 20)
        #expect(lines?.map(Self.index) == Array(1...20))
        #expect(servers[0].run { publisher.transport.isInputPaused } == false)
    }

    @Test func aBusyLoopMissesValuesUnderDropAndItsSubscribersAreTold() {
        let servers = Self.servers(.drop)
        defer { servers.shutdown() }
        let subscriber = Self.subscribe(on: servers[1])
        let (publisher, release) = Self.publishFourWhileHeld(servers)
        servers[0].send(publisher, (5...20).map(Self.pub))
        // Nobody paused: the values past the limit are missed on loop 1 alone.
        #expect(Self.pausedPublishers(on: servers[0]) == 0)
        release()
        Self.expectSixteenMissed(servers, subscriber, publisher: publisher)
        #expect(servers[1].run { servers[1].server.value.stats.counts.dropped } == 16)
    }

    /// Under `disconnect` the loop holds the publisher as under `backpressure` (as one
    /// connection that still reads holds its publishers while it drains): nobody is cut and
    /// nothing is missed.
    @Test func aBusyLoopPausesThePublisherUnderDisconnectAndCutsNobody() {
        let servers = Self.servers(.disconnect)
        defer { servers.shutdown() }
        let subscriber = Self.subscribe(on: servers[1])
        let (publisher, release) = Self.publishFourWhileHeld(servers)
        servers[0].send(publisher, (5...20).map(Self.pub))
        #expect(Self.pausedPublishers(on: servers[0]) == 1)
        release()
        #expect(servers[1].lines(of: subscriber, count: 20)?.map(Self.index) == Array(1...20))
        #expect(servers[1].run { servers[1].server.value.stats.counts.slowConsumerDisconnects } == 0)
    }

    /// A loop whose subscribers of the subject all conflate is one conflating subscriber, which
    /// never pauses a publisher, whatever the subject's policy (`ReplicaReaders`).
    @Test func aLoopWhoseSubscribersAllConflateNeverPausesThePublisher() {
        let servers = Self.servers(.disconnect)
        defer { servers.shutdown() }
        let subscriber = Self.subscribe(on: servers[1], conflating: true)
        Self.awaitOwnerTold(servers, 1)
        let (publisher, release) = Self.publishFourWhileHeld(servers)
        servers[0].send(publisher, (5...20).map(Self.pub))
        // Where `disconnect` held it above; the loop takes them up to the hard limit instead.
        #expect(Self.pausedPublishers(on: servers[0]) == 0)
        release()
        #expect(servers[1].lines(of: subscriber, count: 20)?.map(Self.index) == Array(1...20))
        #expect(servers[1].run { servers[1].server.value.stats.counts.slowConsumerDisconnects } == 0)
    }

    /// A conflating loop past the hard limit misses values, and once it has caught up is told
    /// how many and gets the latest, though no value follows it.
    @Test func aConflatingLoopPastTheHardLimitGetsTheLatestValueOnceCaughtUp() {
        let servers = LoopServers(count: 2) {
            $0.slowConsumer = .drop
            $0.softPendingBytes = 1000
            $0.maxPendingBytes = 2000
        }
        defer { servers.shutdown() }
        let subscriber = Self.subscribe(on: servers[1], conflating: true)
        Self.awaitOwnerTold(servers, 1)
        let (publisher, release) = Self.publishFourWhileHeld(servers)
        let replicas = UnsafeTransfer(servers.replicas(on: 1)!)
        // Taken in one turn: over the soft limit, under the hard one when the turn began.
        servers[0].send(publisher, (5...12).map(Self.pub))
        #expect(eventually { replicas.value.backlog > 2000 })
        servers[0].send(publisher, (13...20).map(Self.pub))
        release()
        let lines = servers[1].lines(of: subscriber, count: 14)
        #expect(lines?.prefix(12).map(Self.index) == Array(1...12))
        #expect(lines?.dropFirst(12).first == #"{"ev":"dropped","sid":"a","count":7}"#)
        #expect(lines?.last.map(Self.index) == 20)
    }

    /// A subscriber of the owner's loop is not slowed by another loop's lag under `drop`.
    @Test func theOwnersOwnSubscribersGetEveryValueWhileAnotherLoopMissesThem() {
        let servers = Self.servers(.drop)
        defer { servers.shutdown() }
        _ = Self.subscribe(on: servers[1])
        let local = Self.subscribe(on: servers[0])
        let (publisher, release) = Self.publishFourWhileHeld(servers)
        defer { release() }
        servers[0].send(publisher, (5...20).map(Self.pub))
        #expect(servers[0].lines(of: local, count: 20)?.map(Self.index) == Array(1...20))
    }

    /// The owner makes each value once for every loop that reads it (`ReplicatedValues`): a
    /// loop that misses some under `drop` is told of them and gets the rest, and another loop
    /// reading the same values gets each in order or is told it missed it (it may fall behind
    /// too, when the owner reads the burst in more than one turn; a gap is told before the
    /// next value).
    @Test func twoLoopsShareTheOwnersValuesAndOneMissingSomeLeavesTheOtherWhole() {
        let servers = LoopServers(count: 3) {
            $0.slowConsumer = .drop
            $0.softPendingBytes = 1000
        }
        defer { servers.shutdown() }
        let busy = Self.subscribe(on: servers[1])
        let whole = Self.subscribe(on: servers[2])
        let (publisher, release) = Self.publishFourWhileHeld(servers)
        // Delivered there before the rest come.
        #expect(servers[2].lines(of: whole, count: 4)?.map(Self.index) == [1, 2, 3, 4])
        servers[0].send(publisher, (5...20).map(Self.pub))
        release()
        Self.expectSixteenMissed(servers, busy, publisher: publisher)
        let replicas = UnsafeTransfer(servers.replicas(on: 2)!)
        #expect(eventually { replicas.value.backlog == 0 })
        servers[0].send(publisher, Self.pub(22))
        var lines: [String] = []
        _ = eventually {
            lines += servers[2].lines(of: whole)
            return lines.contains { Self.index($0) == 22 }
        }
        #expect(Self.accountFor(lines, from: 5) == 23)
    }

    /// After values 1 to 4 handed to loop 1 while held and 5 to 20 missed there under `drop`,
    /// and loop 1 let go: `subscriber` there gets 1 to 4, then, once value 21 is published, is
    /// told it missed 16 before it.
    private static func expectSixteenMissed(
        _ servers: LoopServers, _ subscriber: LoopServer.Client, publisher: LoopServer.Client
    ) {
        #expect(servers[1].lines(of: subscriber, count: 4)?.map(Self.index) == [1, 2, 3, 4])
        // Loop 1 has caught up (its lines are written once the batch is delivered).
        servers[0].send(publisher, Self.pub(21))
        let lines = servers[1].lines(of: subscriber, count: 2)
        #expect(lines?.first == #"{"ev":"dropped","sid":"a","count":16}"#)
        #expect(lines?.last.map(Self.index) == 21)
    }

    /// The value after the last that `lines`, from value `first` on, deliver or tell as missed
    /// (`dropped`), each in its turn; nil when one is out of order.
    private static func accountFor(_ lines: [String], from first: Int) -> Int? {
        var next = first
        for line in lines {
            if let count = line.firstMatch(of: /"ev":"dropped","sid":"a","count":(\d+)/)?.1 {
                next += Int(count)!
            } else if index(line) == next {
                next += 1
            } else {
                return nil
            }
        }
        return next
    }

    /// A publisher on loop 1 whose values the owner has not answered yet is held by the soft
    /// limit, as one that does not read its replies is, and goes on once they are answered.
    @Test func unansweredPubsHoldTheirPublisherAtTheSoftLimit() {
        let servers = LoopServers(count: 2) { $0.softPendingBytes = 1000 }
        defer { servers.shutdown() }
        let publisher = servers[1].connect()
        let big = "\"" + String(repeating: "x", count: 2000) + "\""
        let pausedAtOnce = servers[1].run {
            publisher.transport.receive(#"{"op":"pub","subject":"s","value":"# + big + "}")
            publisher.transport.receive(#"{"op":"ping","ref":1}"#)
            return publisher.transport.isInputPaused
        }
        #expect(pausedAtOnce)
        #expect(servers[1].lines(of: publisher, count: 1) == [#"{"ok":true,"ref":1}"#])
        #expect(servers[1].run { publisher.transport.isInputPaused } == false)
    }

    /// A publisher runs only a crossing window (512 KiB) ahead of the loop delivering its
    /// values, far below the soft limit (8 MiB here), and `stats` counts no pause: the loops'
    /// working set stays small enough for the caches. On a loop that does not own the subject
    /// (publisher 1, the owner's loop held) it is read only that far ahead of the owner's
    /// answers (`SessionSettings.crossingWindow`); on the owner's (publisher 0, the reading
    /// loop held), the owner paces it (`ReaderLink`).
    @Test(arguments: [1, 0])
    func aPublisherRunsOnlyACrossingWindowAheadOfTheHeldLoop(publishingOn index: Int) {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let (publishing, held) = (servers[index], servers[1 - index])
        let subscriber = Self.subscribe(on: held)
        let publisher = publishing.connect()
        let pubs = (1...8).map { Self.largePub($0) }
        let release = held.hold()
        publishing.send(publisher, Array(pubs[..<5]))
        // 500 KB waits for the held loop: within the window, still read.
        #expect(publishing.run { publisher.transport.isInputPaused } == false)
        publishing.send(publisher, Array(pubs[5...]))
        #expect(publishing.run { publisher.transport.isInputPaused })
        release()
        #expect(eventually { publishing.run { publisher.transport.isInputPaused } == false })
        #expect(held.lines(of: subscriber, count: 8)?.map(Self.index) == Array(1...8))
        #expect(publishing.run { publishing.server.value.publisherPauses.pauses } == 0)
    }

    /// A publisher on a third loop is paced there, through the owner's stand-in for it. Its
    /// `pub`s are answered first, so its own crossing window holds nothing: its next request
    /// finds it paced.
    @Test func aPublisherOnAThirdLoopIsPacedThroughTheOwner() {
        let servers = LoopServers(count: 3)
        defer { servers.shutdown() }
        let subscriber = Self.subscribe(on: servers[1])
        let publisher = servers[2].connect()
        let release = servers[1].hold()
        let pubs = (1...9).map { Self.largePub($0, ref: true) }
        var answers = servers[2].send(publisher, Array(pubs[..<8]))
        answers += servers[2].lines(of: publisher, count: 8 - answers.count) ?? []
        #expect(answers.count == 8)
        servers[2].send(publisher, pubs[8])
        #expect(servers[2].run { publisher.transport.isInputPaused })
        #expect(Self.pausedPublishers(on: servers[2]) == 0)
        release()
        #expect(eventually { servers[2].run { publisher.transport.isInputPaused } == false })
        #expect(servers[1].lines(of: subscriber, count: 9)?.map(Self.index) == Array(1...9))
    }

    /// A `pub` of 100 KB whose value starts with `index` (and whose `ref` is `index`).
    private static func largePub(_ index: Int, ref: Bool = false) -> String {
        let asked = ref ? #""ref":\#(index),"# : ""
        return #"{\#(asked)"op":"pub","subject":"s","value":"\#(index)\#(String(repeating: "x", count: 100_000))"}"#
    }

    /// Holds loop 1's thread, then publishes values 1 to 4 on loop 0 and waits until they are
    /// handed to loop 1 (its backlog is then over the soft limit); returns the publisher and
    /// what lets loop 1 go.
    private static func publishFourWhileHeld(
        _ servers: LoopServers
    ) -> (client: LoopServer.Client, release: @Sendable () -> Void) {
        let replicas = UnsafeTransfer(servers.replicas(on: 1)!)
        let release = servers[1].hold()
        let publisher = servers[0].connect()
        servers[0].send(publisher, (1...4).map(Self.pub))
        #expect(eventually { replicas.value.backlog > 1000 })
        return (publisher, release)
    }

    private static func servers(_ policy: SlowConsumerPolicy) -> LoopServers {
        LoopServers(count: 2) {
            $0.slowConsumer = policy
            $0.softPendingBytes = 1000
        }
    }

    private static func subscribe(on server: LoopServer, conflating: Bool = false) -> LoopServer.Client {
        let subscriber = server.connect()
        let conflate = conflating ? #","conflate":true"# : ""
        let answered = server.send(subscriber, #"{"op":"sub","subject":"s","sid":"a"\#(conflate)}"#)
        #expect((answered.isEmpty ? server.lines(of: subscriber, count: 1) : answered) == [#"{"ok":true,"sid":"a"}"#])
        return subscriber
    }

    /// Waits until the owner knows of `count` subscribers of `s` on other loops, and so of how
    /// many of them conflate (`ReplicaReaders`): a reading loop tells it at its turn's end,
    /// apart from the `sub`'s reply, and a value published before judges the loop by the
    /// subject's policy.
    private static func awaitOwnerTold(_ servers: LoopServers, _ count: Int) {
        #expect(eventually { servers[0].run { servers.owned("s")?.replicaSubscribers.told } == count })
    }

    /// The number a `next` line's value starts with; 0 for another line.
    private static func index(_ line: String) -> Int {
        guard let start = line.range(of: #""value":""#)?.upperBound else { return 0 }
        return Int(line[start...].prefix(while: \.isNumber)) ?? 0
    }

    private static func pausedPublishers(on server: LoopServer) -> Int {
        server.run { server.server.value.publisherPauses.pausedNow }
    }
}
