import RunnelProtocol
import Testing

@testable import RunnelServer

/// The streams a clustered node consumes (`ClusterStreams`): caught up once every consumer asked
/// for has started and delivered what its stream held then; a consumer that starts after its
/// subject went is handed back; a subject ends once its stream gets to the end's seq, once;
/// what waits on a stream runs when the stream gets there or stops being consumed. And the
/// maps' expiries asked of the cluster (`MapExpiries`): each once until answered.
@Suite struct ClusterStreamsTests {
    static func entry(_ epoch: String) -> SubjectEntry {
        SubjectEntry(
            name: "r.\(epoch)", kind: .replay, capacity: 5, initial: nil, maxReplayBytes: 1 << 20, epoch: epoch)
    }

    @Test func caughtUpOnceEveryConsumerStartedAndDeliveredWhatItsStreamHeld() {
        var streams = ClusterStreams<String>()
        #expect(streams.hasCaughtUp)
        streams.starting(Self.entry("a"))
        streams.starting(Self.entry("b"))
        #expect(!streams.hasCaughtUp && !streams.isConsuming("a") && streams.entry("a")?.epoch == "a")
        let startedA = streams.started("a", "consumer a", last: 3)
        streams.failedToStart()
        #expect(startedA && !streams.hasCaughtUp && streams.isConsuming("a") && !streams.isConsuming("b"))
        let at2 = streams.consumed(2, of: "a")
        #expect(!at2.caughtUp && !streams.hasCaughtUp && streams.delivered("a") == 2)
        let at3 = streams.consumed(3, of: "a")
        #expect(at3.caughtUp && streams.hasCaughtUp)
        let at4 = streams.consumed(4, of: "a")
        #expect(!at4.caughtUp && streams.delivered("a") == 4)
        // A stream that held nothing newer than the entry has nothing to catch up.
        streams.starting(Self.entry("c"))
        let startedC = streams.started("c", "consumer c", last: 0)
        #expect(startedC && streams.hasCaughtUp)
    }

    @Test func aConsumerStartedAfterItsSubjectWentIsHandedBack() {
        var streams = ClusterStreams<String>()
        streams.starting(Self.entry("a"))
        let (consumer, waits) = streams.stop("a")
        #expect(consumer == nil && waits.isEmpty && !streams.hasCaughtUp)
        let late = streams.started("a", "late", last: 9)
        #expect(!late && streams.hasCaughtUp && streams.entry("a") == nil && streams.entries.isEmpty)
        // One stopped once started: its consumer comes back to be stopped, and it catches up no more.
        streams.starting(Self.entry("b"))
        let startedB = streams.started("b", "consumer b", last: 9)
        #expect(startedB && !streams.hasCaughtUp)
        let stopped = streams.stop("b")
        #expect(stopped.consumer == "consumer b" && streams.hasCaughtUp)
    }

    @Test func aSubjectEndsOnceItsStreamGetsToTheEnd() {
        var streams = ClusterStreams<String>()
        streams.starting(Self.entry("a"))
        _ = streams.started("a", "consumer", last: 0)
        // The entry already holds seq 0: ended now.
        let now = streams.ends("a", after: 0, error: nil)
        let error = ProtocolError(.subjectError, "gone")
        let later = streams.ends("a", after: 5, error: error)
        #expect(now?.epoch == "a" && later == nil)
        let at4 = streams.consumed(4, of: "a")
        let at5 = streams.consumed(5, of: "a")
        let at6 = streams.consumed(6, of: "a")
        #expect(at4.ending == nil && at5.ending == .some(error) && at6.ending == nil)
        // Not consumed here: nothing ends.
        let elsewhere = streams.ends("b", after: 1, error: nil)
        #expect(elsewhere == nil)
    }

    @Test func whatWaitsOnAStreamRunsWhenItGetsThereOrStops() {
        var streams = ClusterStreams<String>()
        streams.starting(Self.entry("a"))
        var ran: [String] = []
        _ = streams.wait(for: 2, of: "a") { ran.append("a2") }
        let cancelled = streams.wait(for: 3, of: "a") { ran.append("a3") }
        _ = streams.wait(for: 9, of: "a") { ran.append("a9") }
        _ = streams.started("a", "consumer", last: 0)
        for action in streams.consumed(2, of: "a").waits { action() }
        #expect(ran == ["a2"])
        let first = streams.cancelWait(cancelled)
        let second = streams.cancelWait(cancelled)
        let at3 = streams.consumed(3, of: "a")
        #expect(first != nil && second == nil && at3.waits.isEmpty)
        for action in streams.stop("a").waits { action() }
        #expect(ran == ["a2", "a9"])
    }

    @Test func anExpiryIsAskedOnceUntilAnswered() {
        var expiries = MapExpiries()
        let expiry = MapExpiry(epoch: "e", key: "k", seq: 4)
        let number = expiries.ask(expiry)
        let again = expiries.ask(expiry)
        let other = expiries.ask(MapExpiry(epoch: "e", key: "k", seq: 5))
        #expect(number != nil && again == nil && other != nil && other != number)
        let answered = expiries.answered(number!)
        let twice = expiries.answered(number!)
        let askedAgain = expiries.ask(expiry)
        #expect(answered && !twice && askedAgain != nil)
    }
}
