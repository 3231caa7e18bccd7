import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelServer

/// `$sys.occupancy.S` counts the subscriptions of every loop (decision 0011): a loop that does
/// not own the subjects reads the owner's occupancy subject through a replica, and tells the
/// owner how many of its subscriptions name S or reach it by a pattern. Loop 0 owns the
/// subjects. Cross-thread: CI runs these under the thread sanitizer.
@Suite struct SubjectReplicaOccupancyTests {
    /// Readers on both loops see one count: loop 1's subscription naming `s` and its pattern
    /// subscription, and loop 0's, as they come and go.
    @Test func theCountIsEveryLoops() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let ownersReader = servers[0].connect()
        let readersReader = servers[1].connect()
        let subscriber = servers[1].connect()
        let local = servers[0].connect()
        servers[0].send(ownersReader, #"{"op":"sub","subject":"$sys.occupancy.s","sid":"o"}"#)
        servers[1].send(readersReader, #"{"op":"sub","subject":"$sys.occupancy.s","sid":"o"}"#)
        Self.expectCount(0, on: servers[1], of: readersReader)
        servers[1].send(subscriber, #"{"op":"sub","subject":"s","sid":"a"}"#)
        Self.expectCount(1, on: servers[1], of: readersReader)
        servers[0].send(local, #"{"op":"sub","subject":"s","sid":"b"}"#)
        servers[1].send(subscriber, #"{"op":"sub","subject":"*","sid":"p"}"#)
        Self.expectCount(3, on: servers[1], of: readersReader)
        Self.expectCount(3, on: servers[0], of: ownersReader)
        servers[1].send(subscriber, #"{"op":"unsub","sid":"a"}"#, #"{"op":"unsub","sid":"p"}"#)
        Self.expectCount(1, on: servers[0], of: ownersReader)
        Self.expectCount(1, on: servers[1], of: readersReader)
    }

    /// The owner keeps an occupancy subject that only another loop reads, and lets it go once
    /// that loop's last reader has gone.
    @Test func anOccupancySubjectReadElsewhereLivesAsLongAsItIsRead() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let reader = servers[1].connect()
        let local = servers[0].connect()
        servers[1].send(reader, #"{"op":"sub","subject":"$sys.occupancy.s","sid":"o"}"#)
        Self.expectCount(0, on: servers[1], of: reader)
        // An owner's reader of it comes and goes: loop 1's still reads it.
        servers[0].send(local, #"{"op":"sub","subject":"$sys.occupancy.s","sid":"x"}"#)
        servers[0].send(local, #"{"op":"unsub","sid":"x"}"#, #"{"op":"sub","subject":"s","sid":"y"}"#)
        Self.expectCount(1, on: servers[1], of: reader)
        servers[1].send(reader, #"{"op":"unsub","sid":"o"}"#)
        #expect(eventually { servers[0].run { servers.owned("$sys.occupancy.s") == nil } })
    }

    /// A pattern of occupancy subjects on loop 1 reads the owner's: the counts of subjects
    /// subscribed to on either loop, made as they come; the owner lets them go once the
    /// pattern's last subscription has gone.
    @Test func aPatternOfOccupancySubjectsReadsEveryLoops() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let reader = servers[1].connect()
        let subscriber = servers[1].connect()
        let local = servers[0].connect()
        // Answered once the owner has sent the subjects the pattern reads.
        let answered = servers[1].send(reader, #"{"op":"sub","subject":"$sys.occupancy.*","sid":"o"}"#)
        #expect(answered.isEmpty && servers[1].lines(of: reader, count: 1) == [#"{"ok":true,"sid":"o"}"#])
        servers[0].send(local, #"{"op":"sub","subject":"s","sid":"a"}"#)
        servers[1].send(subscriber, #"{"op":"sub","subject":"t","sid":"b"}"#, #"{"op":"sub","subject":"s","sid":"c"}"#)
        var counts: [String: String] = [:]
        let expected = [
            "$sys.occupancy.s": #"{"subscribers":2}"#, "$sys.occupancy.t": #"{"subscribers":1}"#,
        ]
        #expect(
            eventually {
                for line in servers[1].lines(of: reader) {
                    guard let subject = line.range(of: #""subject":""#), let value = line.range(of: #","value":"#)
                    else { continue }
                    counts[String(line[subject.upperBound...].prefix { $0 != "\"" })] = String(
                        line[value.upperBound...].dropLast())
                }
                return counts == expected
            }, "\(counts)")
        servers[1].send(reader, #"{"op":"unsub","sid":"o"}"#)
        #expect(
            eventually {
                servers[0].run { servers.owned("$sys.occupancy.s") == nil && servers.owned("$sys.occupancy.t") == nil }
            })
    }

    /// The last `{"subscribers":N}` `client` is sent comes to say `count`.
    /// A pattern subscription on loop 1 counts for a subject that does not exist (loop 1 holds
    /// no replica of it): the owner keeps a stand-in for it (`RemotePatternReach`).
    @Test func aPatternOnAnotherLoopCountsForASubjectThatDoesNotExist() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let watcher = servers[0].connect()
        let subscriber = servers[1].connect()
        // The owner's own: answered, and the count now, at once.
        let first = servers[0].send(watcher, #"{"op":"sub","subject":"$sys.occupancy.w.a","sid":"o"}"#)
        #expect(first.last == #"{"ev":"next","sid":"o","value":{"subscribers":0}}"#)
        servers[1].send(subscriber, #"{"op":"sub","subject":"w.*","sid":"p"}"#)
        Self.expectCount(1, on: servers[0], of: watcher)
        #expect(servers[0].run { servers.owned("w.a") } == nil)
        servers[1].send(subscriber, #"{"op":"unsub","sid":"p"}"#)
        Self.expectCount(0, on: servers[0], of: watcher)
    }

    /// Five subscriptions in one turn of loop 1: the owner's watchers are told 0 -> 1 at once,
    /// as for its own subscriptions, before the rest comes within the coalescing time.
    @Test func theFirstOfABurstOnAnotherLoopIsToldAtOnce() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let watcher = servers[0].connect()
        let subscriber = servers[1].connect()
        // The owner's own: answered, and the count now, at once.
        let first = servers[0].send(watcher, #"{"op":"sub","subject":"$sys.occupancy.b","sid":"o"}"#)
        #expect(first.last == #"{"ev":"next","sid":"o","value":{"subscribers":0}}"#)
        servers[1].send(subscriber, (0..<5).map { #"{"op":"sub","subject":"b","sid":"s\#($0)"}"# })
        let counts = servers[0].lines(of: watcher, count: 2)?.map { $0.split(separator: ":").last }
        #expect(counts == ["1}}", "5}}"])
    }

    private static func expectCount(_ count: Int, on server: LoopServer, of client: LoopServer.Client) {
        var last: String?
        let expected = #"{"ev":"next","sid":"o","value":{"subscribers":\#(count)}}"#
        #expect(
            eventually {
                last = server.lines(of: client).last { $0.hasPrefix(#"{"ev":"next""#) } ?? last
                return last == expected
            }, "\(last ?? "nothing")")
    }
}
