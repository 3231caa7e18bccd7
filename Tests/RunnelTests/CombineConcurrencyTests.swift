import Dispatch
import RunnelTestSupport
import Testing

@testable import Runnel

/// Drives `subjects` from one thread each: `count` values, then completion.
private func drive(_ subjects: [Subject<Int>], count: Int) {
    DispatchQueue.concurrentPerform(iterations: subjects.count) { index in
        for value in 0..<count { subjects[index].sendNext(value) }
        subjects[index].sendCompleted()
    }
}

@Suite struct CombineConcurrencyTests {
    let count = 5_000

    @Test func mergeSerialisesSourcesOnSeveralThreads() {
        let subjects = (0..<4).map { _ in Subject<Int>() }
        let output = OverlapRecorder<Int>()
        _ = ImmediateScheduler.shared.performAsCurrent { Signal.merge(subjects).subscribe(output) }
        drive(subjects, count: count)
        #expect(output.overlaps == 0)
        #expect(output.recorder.values.count == 4 * count)
        #expect(output.recorder.events.last.map { if case .completed = $0 { true } else { false } } == true)
        #expect(output.recorder.events.filter(\.isTerminal).count == 1)
    }

    @Test func zipSerialisesSourcesOnSeveralThreads() {
        let subjects = (0..<4).map { _ in Subject<Int>() }
        let output = OverlapRecorder<[Int]>()
        _ = ImmediateScheduler.shared.performAsCurrent { Signal.zip(subjects).subscribe(output) }
        drive(subjects, count: count)
        #expect(output.overlaps == 0)
        #expect(output.recorder.values == (0..<count).map { Array(repeating: $0, count: 4) })
        #expect(output.recorder.isCompleted)
    }

    @Test func combineLatestSerialisesSourcesOnSeveralThreads() {
        let subjects = (0..<4).map { _ in Subject<Int>() }
        let output = OverlapRecorder<[Int]>()
        _ = ImmediateScheduler.shared.performAsCurrent { Signal.combineLatest(subjects).subscribe(output) }
        drive(subjects, count: count)
        #expect(output.overlaps == 0)
        #expect(output.recorder.values.last == Array(repeating: count - 1, count: 4))
        #expect(output.recorder.events.filter(\.isTerminal).count == 1)
        #expect(output.recorder.isCompleted)
    }

    @Test func sampleSerialisesSourceAndSamplerOnSeveralThreads() {
        let subjects = (0..<2).map { _ in Subject<Int>() }
        let output = OverlapRecorder<Int>()
        _ = ImmediateScheduler.shared.performAsCurrent { subjects[0].sample(subjects[1]).subscribe(output) }
        drive(subjects, count: count)
        #expect(output.overlaps == 0)
        #expect(output.recorder.events.filter(\.isTerminal).count == 1)
        #expect(output.recorder.events.last?.isTerminal == true)
    }

    @Test func flattenSerialisesInnersOnSeveralThreads() {
        let subjects = (0..<4).map { _ in Subject<Int>() }
        let outer = Subject<Signal<Int>>()
        let output = OverlapRecorder<Int>()
        ImmediateScheduler.shared.performAsCurrent {
            outer.flatten(maxConcurrent: 0).subscribe(output)
            for subject in subjects { outer.sendNext(subject) }
            outer.sendCompleted()
        }
        drive(subjects, count: count)
        #expect(output.overlaps == 0)
        #expect(output.recorder.values.count == 4 * count)
        #expect(output.recorder.events.filter(\.isTerminal).count == 1)
        #expect(output.recorder.isCompleted)
    }

    @Test func takeUntilSendsNothingAfterCompletingFromAnotherThread() {
        let subjects = (0..<2).map { _ in Subject<Int>() }
        let output = OverlapRecorder<Int>()
        _ = ImmediateScheduler.shared.performAsCurrent { subjects[0].take(until: subjects[1]).subscribe(output) }
        drive(subjects, count: count)
        #expect(output.overlaps == 0)
        let events = output.recorder.events
        #expect(events.filter(\.isTerminal).count == 1)
        #expect(events.last?.isTerminal == true)
    }
}
