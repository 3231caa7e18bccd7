import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelServer

/// A loop that does not own the subjects, in a clustered node (decision 0011): its
/// subscriptions are the owner's cluster interest as the owner's own are (`RemoteInterest`),
/// so the cluster holds the NATS subscriptions that bring other nodes' values of what they
/// read; a `sub` reply there waits until the other nodes know; the cluster's gap notices reach
/// the subscription they are about as `dropped`. The owner's store plays the cluster
/// (`SharedMemoryStore`, its interest the cluster's own). Cross-thread: CI runs these under
/// the thread sanitizer.
@Suite struct SubjectReplicaClusterTests {
    @Test func aReadingLoopsSubscriptionsAreTheClustersInterest() throws {
        let cluster = SharedMemoryStore()
        let servers = try LoopServers(count: 2, ownersStore: { _ in cluster })
        defer { servers.shutdown() }
        let client = servers[1].connect()
        servers[1].send(
            client, #"{"op":"sub","subject":"s","sid":"a"}"#, #"{"op":"sub","subject":"p.*","sid":"p"}"#,
            #"{"op":"sub","subject":"l","sid":"z","ops":[{"op":"zipWith","subject":"r"}]}"#)
        #expect(eventually { Self.nats(of: cluster, on: servers[0]) == ["s", "p.*", "l", "r"] })
        // The other nodes do not know yet: no reply.
        #expect(servers[1].lines(of: client).isEmpty)
        servers[0].run { cluster.announce() }
        #expect(
            servers[1].lines(of: client, count: 3) == [
                #"{"ok":true,"sid":"a"}"#, #"{"ok":true,"sid":"p"}"#, #"{"ok":true,"sid":"z"}"#,
            ])
        // A gap in `s`: told to the subscriptions on loop 1 that read it, before the next value.
        servers[0].run { cluster.noteMissed(2, in: "s") }
        let publisher = servers[0].connect()
        servers[0].send(publisher, #"{"op":"pub","subject":"s","value":1}"#)
        #expect(
            servers[1].lines(of: client, count: 2) == [
                #"{"ev":"dropped","sid":"a","count":2}"#, #"{"ev":"next","sid":"a","value":1}"#,
            ])
        servers[1].send(client, #"{"op":"unsub","sid":"a"}"#, #"{"op":"unsub","sid":"z"}"#)
        #expect(eventually { Self.nats(of: cluster, on: servers[0]) == ["p.*"] })
        servers[1].close(client)
        #expect(eventually { Self.nats(of: cluster, on: servers[0]).isEmpty })
    }

    /// While the owner's link to the cluster is down, a `sub` there that needs the cluster (a
    /// retained subject's) is refused with `unavailable`, as on the owner; once it is back, it
    /// is served.
    @Test func aSubNeedingTheClusterIsRefusedWhileTheOwnersLinkIsDown() throws {
        let cluster = SharedMemoryStore()
        let servers = try LoopServers(count: 2, ownersStore: { _ in cluster })
        defer { servers.shutdown() }
        let client = servers[1].connect()
        #expect(
            servers[1].ask(client, #"{"op":"create","subject":"r","kind":"replay","ref":"c"}"#, ref: "c")
                == #"{"ok":true,"ref":"c"}"#)
        servers[0].run { cluster.link(up: false) }
        #expect(
            servers[1].ask(client, #"{"op":"sub","subject":"r","sid":"a","ref":"s"}"#, ref: "s")?.contains(
                #""ok":false,"ref":"s","code":"unavailable""#) == true)
        servers[0].run { cluster.link(up: true) }
        #expect(eventually { servers[1].run { (try? servers.replicas(on: 1)?.checkShared()) != nil } })
        #expect(
            servers[1].ask(client, #"{"op":"sub","subject":"r","sid":"a","ref":"t"}"#, ref: "t")
                == #"{"ok":true,"ref":"t","sid":"a"}"#)
    }

    /// A loop that has asked the owner for nothing yet still hears that the owner's link went
    /// down (so its `/healthz` says so, and what needs the cluster is refused there), and that
    /// it came back.
    @Test func aLoopThatAskedForNothingHearsOfTheOwnersLink() throws {
        let cluster = SharedMemoryStore()
        let servers = try LoopServers(count: 2, ownersStore: { _ in cluster })
        defer { servers.shutdown() }
        #expect(servers[1].run { servers[1].server.value.isClusterLinkDown } == false)
        servers[0].run { cluster.link(up: false) }
        #expect(eventually { servers[1].run { servers[1].server.value.isClusterLinkDown } })
        #expect(servers[1].run { (try? servers.replicas(on: 1)?.checkShared()) == nil })
        servers[0].run { cluster.link(up: true) }
        #expect(eventually { servers[1].run { !servers[1].server.value.isClusterLinkDown } })
    }

    /// A `from` beyond what the owner delivered (another node gave it) waits there for the
    /// owner to deliver it, as a `sub` on the owner does, and then resumes.
    @Test func aFromBeyondWhatTheOwnerDeliveredWaitsForIt() throws {
        let cluster = SharedMemoryStore()
        let servers = try LoopServers(count: 2, ownersStore: { _ in cluster })
        defer { servers.shutdown() }
        let owners = servers[0].connect()
        servers[0].send(
            owners, #"{"op":"create","subject":"r","kind":"replay"}"#, #"{"op":"pub","subject":"r","value":1}"#)
        let epoch = servers[0].run { servers.owned("r")!.epoch }
        servers[0].run { cluster.isBehind = true }
        let client = servers[1].connect()
        servers[1].send(client, #"{"op":"sub","subject":"r","sid":"a","from":"\#(epoch):3"}"#)
        #expect(eventually { servers[0].run { cluster.deliveryWaits.map(\.position.seq) } == [3] })
        #expect(servers[1].lines(of: client).isEmpty)
        servers[0].send(owners, #"{"op":"pub","subject":"r","value":2}"#, #"{"op":"pub","subject":"r","value":3}"#)
        servers[0].send(owners, #"{"op":"pub","subject":"r","value":4}"#)
        servers[0].run { cluster.delivered() }
        #expect(
            servers[1].lines(of: client, count: 2) == [
                #"{"ok":true,"sid":"a","resumed":true}"#, #"{"ev":"next","sid":"a","value":4,"pos":"\#(epoch):4"}"#,
            ])
    }

    private static func nats(of cluster: SharedMemoryStore, on owner: LoopServer) -> Set<String> {
        owner.run { cluster.natsSubscriptions }
    }
}
