import RunnelTestSupport
import Testing

@testable import Runnel

/// Subjects built as they were left (retained values, a terminal event), as a store that keeps
/// subjects elsewhere restores them.
@Suite struct SubjectRestoreTests {
    @Test func replaySubjectKeepsTheLastValuesItIsGiven() {
        let subject = ReplaySubject(capacity: 2, retaining: [1, 2, 3])
        #expect(subject.replayedValues == [2, 3])
        #expect(!subject.isTerminated)
        subject.sendNext(4)
        let log = Recorder<Int>()
        inline { subject.subscribe(log) }
        #expect(log.eventDescriptions == ["next(3)", "next(4)"])
    }

    @Test func terminatedReplaySubjectReplaysThenTerminatesAndTakesNothingMore() {
        let subject = ReplaySubject(capacity: 5, retaining: [7, 8], terminal: .error(TestError(1)))
        #expect(subject.isTerminated)
        subject.sendNext(9)
        let log = Recorder<Int>()
        inline { subject.subscribe(log) }
        #expect(log.eventDescriptions == ["next(7)", "next(8)", "error(TestError(1))"])
    }

    @Test func completedBehaviorSubjectSendsItsValueThenCompletion() {
        let subject = BehaviorSubject(3, terminal: .completed)
        subject.sendNext(4)
        let log = Recorder<Int>()
        inline { subject.subscribe(log) }
        #expect(log.eventDescriptions == ["next(3)", "completed"])
        #expect(subject.value == 3)
    }
}
