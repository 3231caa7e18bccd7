import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelServer

/// Pattern subscriptions on a loop that does not own the subjects (decision 0011): the owner
/// sends that loop a replica of every subject the pattern matches, before the `sub` is
/// answered, and of each it makes later; the loop's pattern subscriptions read them as the
/// owner's read its subjects. Loop 0 owns the subjects. Cross-thread: CI runs these under the
/// thread sanitizer.
@Suite struct SubjectReplicaPatternTests {
    /// A pattern on loop 1 gets what the same pattern on loop 0 gets: a matching replay
    /// subject's values first, then values of matching subjects, those made after the `sub`
    /// and made again after a `delete` among them, none of others; the owner counts it among
    /// the receivers.
    @Test func aPatternOnAnotherLoopGetsWhatTheOwnersGets() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        let watcher = servers[0].connect()
        let reader = servers[1].connect()
        servers[0].send(
            owner, #"{"op":"create","subject":"a.r","kind":"replay","capacity":2}"#,
            #"{"op":"pub","subject":"a.r","value":1}"#, #"{"op":"pub","subject":"a.r","value":2}"#,
            #"{"op":"pub","subject":"b.x","value":0}"#)
        let request = #"{"op":"sub","subject":"a.*","sid":"p","ref":1}"#
        let there = servers[0].send(watcher, request)
        #expect(servers[1].send(reader, request, #"{"op":"ping","ref":2}"#).isEmpty)
        let here = try #require(servers[1].lines(of: reader, count: 4))
        #expect(here == there + [#"{"ok":true,"ref":2}"#])
        #expect(here.first == #"{"ok":true,"ref":1,"sid":"p"}"#)
        // The replay subject's replica and the pattern subscription make it one receiver there.
        #expect(
            eventually {
                servers[0].send(owner, #"{"op":"pub","subject":"a.r","value":3,"ref":"c"}"#).contains(
                    #"{"ok":true,"ref":"c","receivers":2}"#)
            })
        servers[0].send(owner, #"{"op":"pub","subject":"a.r","value":"mark"}"#)
        for (server, client) in [(servers[0], watcher), (servers[1], reader)] {
            #expect(eventually { server.lines(of: client).contains { $0.contains(#""value":"mark""#) } })
        }
        servers[0].send(
            owner, #"{"op":"pub","subject":"a.new","value":"n"}"#, #"{"op":"pub","subject":"b.x","value":"no"}"#,
            #"{"op":"delete","subject":"a.r"}"#, #"{"op":"create","subject":"a.r","kind":"subject"}"#,
            #"{"op":"pub","subject":"a.r","value":"again"}"#, #"{"op":"pub","subject":"a.new","value":"end"}"#)
        var ownersLines: [String] = []
        #expect(
            eventually {
                ownersLines += servers[0].lines(of: watcher)
                return ownersLines.last?.contains(#""value":"end""#) == true
            })
        var readersLines: [String] = []
        #expect(
            eventually {
                readersLines += servers[1].lines(of: reader)
                return readersLines.last?.contains(#""value":"end""#) == true
            })
        #expect(readersLines == ownersLines)
        #expect(ownersLines.count == 3 && ownersLines[1].contains(#""value":"again""#))
    }

    /// The first value of a subject made after a pattern subscription on another loop counts
    /// it among its receivers, whichever loop publishes it, before that loop has told the owner
    /// of its replica.
    @Test func aPatternOnAnotherLoopIsAReceiverOfANewSubjectsFirstValue() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        let reader = servers[1].connect()
        let publisher = servers[1].connect()
        servers[1].send(reader, #"{"op":"sub","subject":"n.*","sid":"p"}"#, #"{"op":"sub","subject":"n.>","sid":"q"}"#)
        #expect(servers[1].lines(of: reader, count: 2) == [#"{"ok":true,"sid":"p"}"#, #"{"ok":true,"sid":"q"}"#])
        #expect(
            servers[0].send(owner, #"{"op":"pub","subject":"n.a","value":1,"ref":"o"}"#)
                == [#"{"ok":true,"ref":"o","receivers":2}"#])
        #expect(servers[1].send(publisher, #"{"op":"pub","subject":"n.b","value":2,"ref":"r"}"#).isEmpty)
        #expect(servers[1].lines(of: publisher, count: 1) == [#"{"ok":true,"ref":"r","receivers":2}"#])
        #expect(
            servers[0].send(owner, #"{"op":"pub","subject":"n.a.deep","value":3,"ref":"d"}"#)
                == [#"{"ok":true,"ref":"d","receivers":1}"#])
    }

    /// The replicas a pattern brought are let go with its last subscription, and the owner
    /// then counts nobody there.
    @Test func thePatternsReplicasGoWithIt() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        let reader = servers[1].connect()
        servers[0].send(owner, #"{"op":"pub","subject":"a.x","value":0}"#)
        servers[1].send(reader, #"{"op":"sub","subject":"a.>","sid":"p"}"#)
        #expect(servers[1].lines(of: reader, count: 1) == [#"{"ok":true,"sid":"p"}"#])
        #expect(servers[1].run { servers.replicas(on: 1)?["a.x"] != nil })
        servers[1].send(reader, #"{"op":"unsub","sid":"p"}"#)
        #expect(eventually { servers[1].run { servers.replicas(on: 1)?["a.x"] == nil } })
        #expect(
            eventually {
                servers[0].send(owner, #"{"op":"pub","subject":"a.x","value":1,"ref":"r"}"#)
                    == [#"{"ok":true,"ref":"r","receivers":0}"#]
            })
    }
}
