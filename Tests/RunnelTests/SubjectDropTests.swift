import RunnelTestSupport
import Synchronization
import Testing

@testable import Runnel

/// What a replay subject lets go: told to its `dropped` hook, oldest first, whether a newer
/// value pushed it out (by count or by weight) or `dropReplayed(while:)` let it go.
@Suite struct SubjectDropTests {
    /// The values a subject's `dropped` hook was told of.
    final class Drops: Sendable {
        private let values = Mutex<[Int]>([])
        var all: [Int] { values.withLock { $0 } }
        @Sendable func note(_ value: Int) { values.withLock { $0.append(value) } }
    }

    @Test func valuesPushedOutByCountOrWeightAreTold() {
        let drops = Drops()
        let subject = ReplaySubject<Int>(capacity: 3, maxWeight: 10, weight: { $0 }, dropped: drops.note)
        for value in [1, 2, 3, 4] { subject.sendNext(value) }
        #expect(drops.all == [1])
        subject.sendNext(8)
        #expect(drops.all == [1, 2, 3, 4] && subject.replayedValues == [8])
        let behavior = BehaviorSubject(0, dropped: drops.note)
        behavior.sendNext(5)
        #expect(drops.all.last == 0 && behavior.value == 5)
    }

    @Test func dropReplayedLetsTheOldestGoWhileThePredicateHolds() {
        let drops = Drops()
        let subject = ReplaySubject<Int>(capacity: 10, maxWeight: 100, weight: { $0 }, dropped: drops.note)
        for value in [1, 2, 5, 3] { subject.sendNext(value) }
        #expect(subject.dropReplayed(while: { $0 < 4 }) == 2)
        #expect(subject.replayedValues == [5, 3] && subject.retainedWeight == 8 && drops.all == [1, 2])
        let log = Recorder<Int>()
        inline { subject.subscribe(log) }
        #expect(log.eventDescriptions == ["next(5)", "next(3)"])
        #expect(subject.dropReplayed(while: { _ in true }) == 2 && subject.replayedValues.isEmpty)
        #expect(subject.retainedWeight == 0 && drops.all == [1, 2, 5, 3])
    }
}
