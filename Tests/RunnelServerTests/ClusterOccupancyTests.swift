import Runnel
import Testing

@testable import RunnelServer

/// `ClusterOccupancy` on a virtual clock, its messages caught instead of sent: what a node
/// tells the others of the subjects they watch, how it adds up theirs, and what it forgets of a
/// node given up. Tests/blackbox/test_cluster_occupancy.py checks the same between real nodes.
@Suite struct ClusterOccupancyTests {
    /// The messages sent, as text, and the subjects whose other nodes' count changed.
    private final class Wire {
        var sent: [String] = []
        var changed: [String] = []

        func take() -> (sent: [String], changed: [String]) {
            defer { (sent, changed) = ([], []) }
            return (sent, changed)
        }
    }

    private let scheduler = TestScheduler()
    private let wire = Wire()
    private let occupancy: ClusterOccupancy
    /// This node's own counts.
    private let local = Counts()

    private final class Counts: @unchecked Sendable {
        var bySubject: [String: Int] = [:]
    }

    init() {
        let wire = wire
        let local = local
        occupancy = ClusterOccupancy(instance: "a-1", scheduler: scheduler) { payload in
            wire.sent.append(String(decoding: payload, as: UTF8.self))
        }
        occupancy.localCount = { local.bySubject[$0] ?? 0 }
        occupancy.othersChanged = { wire.changed.append($0) }
    }

    private func from(_ name: String, _ text: String) { occupancy.received(Array(text.utf8), from: name) }

    /// What went out at the end of the loop's turn.
    private func endOfTurn() -> (sent: [String], changed: [String]) {
        scheduler.advance()
        return wire.take()
    }

    @Test func watchingAsksTheOthersAndAddsUpTheirCounts() {
        occupancy.watch("s")
        occupancy.watch("t")
        // One message for the turn, and nothing twice.
        occupancy.watch("s")
        #expect(endOfTurn().sent == ["w s\nw t"])
        from("b-1", "c 2 s")
        from("c-1", "c 3 s\nc 1 t")
        #expect(occupancy.count(of: "s") == 5 && occupancy.count(of: "t") == 1)
        #expect(endOfTurn().changed == ["s", "s", "t"])
        // The same count again changes nothing; 0 takes the node out.
        from("b-1", "c 2 s")
        from("b-1", "c 0 s")
        #expect(occupancy.count(of: "s") == 3 && endOfTurn().changed == ["s"])
        // A count of a subject not watched, or one that does not parse, is ignored.
        from("b-1", "c 4 u\nc x s\nc -1 s\nc 5")
        #expect(occupancy.count(of: "u") == 0 && occupancy.count(of: "s") == 3 && endOfTurn().changed.isEmpty)
        // Its own messages come back from NATS: ignored.
        from("a-1", "c 9 s")
        #expect(occupancy.count(of: "s") == 3)
        occupancy.unwatch("s")
        #expect(endOfTurn().sent == ["u s"] && occupancy.count(of: "s") == 0)
    }

    @Test func aWatchIsAnsweredAndEachChangeToldUntilItEnds() {
        local.bySubject["s"] = 2
        from("b-1", "w s")
        #expect(endOfTurn().sent == ["c 2 s"])
        #expect(Array(occupancy.watchedElsewhere) == ["s"])
        // Told on change only.
        occupancy.tell("s", count: 2)
        occupancy.tell("s", count: 3)
        occupancy.tell("t", count: 1)
        #expect(endOfTurn().sent == ["c 3 s"])
        // A second watcher gets the count at once; the first one's end leaves the second's.
        from("c-1", "w s")
        #expect(endOfTurn().sent == ["c 2 s"])
        from("b-1", "u s")
        #expect(Array(occupancy.watchedElsewhere) == ["s"])
        from("c-1", "u s")
        #expect(occupancy.watchedElsewhere.isEmpty)
        occupancy.tell("s", count: 4)
        #expect(endOfTurn().sent.isEmpty)
    }

    @Test func aWholeListReplacesWhatANodeWatched() {
        from("b-1", "w s\nw t")
        _ = endOfTurn()
        from("b-1", "=\nw t")
        #expect(Set(occupancy.watchedElsewhere) == ["t"])
        // This node's own whole list, as sent when it meets a node or its link comes back.
        occupancy.watch("x")
        _ = endOfTurn()
        occupancy.sendWatches()
        #expect(endOfTurn().sent == ["=\nw x"])
    }

    @Test func aNodeGivenUpIsForgotten() {
        occupancy.watch("s")
        from("b-1", "c 2 s\nw t")
        from("c-1", "c 1 s\nw t")
        _ = endOfTurn()
        occupancy.forget("b-1")
        #expect(occupancy.count(of: "s") == 1 && endOfTurn().changed == ["s"])
        #expect(Array(occupancy.watchedElsewhere) == ["t"])
        occupancy.forget("c-1")
        #expect(occupancy.count(of: "s") == 0 && occupancy.watchedElsewhere.isEmpty)
    }

    @Test func aLongTurnGoesOutInPartsOfAtMostPartBytes() {
        let names = (0..<10_000).map { "subject.number.\($0)" }
        for name in names { occupancy.watch(name) }
        // The full parts went out on the way; one send is left for the turn's end.
        #expect(scheduler.pendingCount == 1)
        let sent = endOfTurn().sent
        #expect(sent.count > 1 && sent.allSatisfy { $0.utf8.count < ClusterOccupancy.part })
        #expect(sent.flatMap { $0.split(separator: "\n") }.map { String($0.dropFirst(2)) } == names)
    }
}
