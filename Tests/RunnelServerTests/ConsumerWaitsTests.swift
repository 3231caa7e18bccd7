import Testing

@testable import RunnelServer

/// What waits for a node's consumer of a stream (`ConsumerWaits`): run once delivered as far as
/// its seq, in the order added, each stream apart; stopped once (`cancel`) it never runs again;
/// the stream's end runs what is left.
@Suite struct ConsumerWaitsTests {
    @Test func whatWaitsRunsOnceItsSeqIsDelivered() {
        var waits = ConsumerWaits()
        var ran: [String] = []
        _ = waits.add(epoch: "e", seq: 5) { ran.append("e5") }
        _ = waits.add(epoch: "e", seq: 3) { ran.append("e3") }
        _ = waits.add(epoch: "f", seq: 1) { ran.append("f1") }
        for action in waits.delivered(2, epoch: "e") { action() }
        #expect(ran.isEmpty)
        for action in waits.delivered(5, epoch: "e") { action() }
        #expect(ran == ["e5", "e3"])
        for action in waits.delivered(9, epoch: "e") { action() }
        #expect(ran == ["e5", "e3"] && !waits.isEmpty)
        for action in waits.ended(epoch: "f") { action() }
        #expect(ran == ["e5", "e3", "f1"] && waits.isEmpty)
    }

    @Test func aCancelledWaitNeverRuns() {
        var waits = ConsumerWaits()
        var ran = 0
        let id = waits.add(epoch: "e", seq: 5) { ran += 1 }
        let cancelled = waits.cancel(id)
        #expect(cancelled != nil && waits.cancel(id) == nil && waits.isEmpty)
        cancelled?()
        #expect(waits.delivered(5, epoch: "e").isEmpty && ran == 1)
    }
}
