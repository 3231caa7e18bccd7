import RunnelTestSupport
import Testing

@testable import Runnel

@Suite struct BindTests {
    @Test func mergesTheReturnedSignals() {
        let (recorder, _) = record(
            [1, 2, 3].signal.bind { { value, _ in [value, value * 10].signal } })
        #expect(recorder.values == [1, 10, 2, 20, 3, 30])
        #expect(recorder.isCompleted)
    }

    @Test func waitsForInnerSignalsBeforeCompleting() {
        let inner = ManualSource<Int>()
        let outer = ManualSource<Int>()
        let (recorder, _) = record(outer.signal.bind { { _, _ in inner.signal } })
        outer.send(1)
        outer.complete()
        #expect(!recorder.isCompleted)
        inner.send(7)
        inner.complete()
        #expect(recorder.values == [7])
        #expect(recorder.isCompleted)
    }

    @Test func completesWhenOuterCompletesWithNoInners() {
        let outer = ManualSource<Int>()
        let (recorder, _) = record(outer.signal.bind { { _, _ in Signal<Int>.never } })
        outer.complete()
        #expect(recorder.events.count == 1)
        #expect(recorder.isCompleted)
    }

    @Test func stopFlagCompletesTheOuterSideAndStillMergesTheReturnedSignal() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(
            source.signal.bind {
                { value, stop in
                    if value == 2 { stop = true }
                    return Signal.just(value)
                }
            })
        source.send(1, 2)
        #expect(source.isDisposed)
        source.sendToAll([3])
        #expect(recorder.values == [1, 2])
        #expect(recorder.isCompleted)
    }

    @Test func stopFlagWaitsForLiveInnerSignals() {
        let outer = ManualSource<Int>()
        let inner = ManualSource<Int>()
        let (recorder, _) = record(
            outer.signal.bind {
                { _, stop in
                    stop = true
                    return inner.signal
                }
            })
        outer.send(1)
        #expect(outer.isDisposed)
        #expect(!recorder.isCompleted)
        inner.send(5)
        inner.complete()
        #expect(recorder.values == [5])
        #expect(recorder.isCompleted)
    }

    @Test func returningNilCompletesTheOuterSide() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.bind { { value, _ in value < 2 ? Signal.just(value) : nil } })
        source.send(1, 2, 3)
        #expect(recorder.values == [1])
        #expect(recorder.isCompleted)
        #expect(source.isDisposed)
    }

    @Test func factoryRunsPerSubscription() {
        let signal = [1, 2, 3].signal.bind { () -> (Int, inout Bool) -> Signal<Int>? in
            var total = 0
            return { value, _ in
                total += value
                return Signal.just(total)
            }
        }
        #expect(record(signal).0.values == [1, 3, 6])
        #expect(record(signal).0.values == [1, 3, 6])
    }

    @Test func outerErrorIsSent() {
        let source = ManualSource<Int>()
        let inner = ManualSource<Int>()
        let (recorder, _) = record(source.signal.bind { { _, _ in inner.signal } })
        source.send(1)
        source.fail(TestError(4))
        #expect(recorder.error as? TestError == TestError(4))
        #expect(inner.isDisposed)
    }

    @Test func innerErrorIsSentAndDisposesEverything() {
        let source = ManualSource<Int>()
        let inner = ManualSource<Int>()
        let (recorder, _) = record(source.signal.bind { { _, _ in inner.signal } })
        source.send(1, 2)
        #expect(inner.liveCount == 2)
        inner.fail(TestError(2))
        #expect(recorder.error as? TestError == TestError(2))
        #expect(recorder.events.count == 1)
        #expect(source.isDisposed)
        #expect(inner.liveCount == 0)
    }

    @Test func disposingDisposesOuterAndInners() {
        let source = ManualSource<Int>()
        let inner = ManualSource<Int>()
        let (recorder, disposable) = record(source.signal.bind { { _, _ in inner.signal } })
        source.send(1)
        disposable.dispose()
        #expect(source.isDisposed)
        #expect(inner.isDisposed)
        inner.sendToAll([9])
        #expect(recorder.events.isEmpty)
        expectDisposalReachesSource(sending: [1, 2]) { $0.bind { { value, _ in Signal.just(value) } } }
    }

    @Test func completedInnerSubscriptionsAreReleased() {
        let outer = ManualSource<Int>()
        let inner = ManualSource<Int>()
        let signal = outer.signal.bind { { _, _ in inner.signal } }
        let recorder = Recorder<Int>()
        record(signal, into: recorder)
        outer.send(1, 2, 3)
        #expect(inner.liveCount == 3)
        inner.complete()
        #expect(inner.liveCount == 0)
        #expect(!recorder.isCompleted)
        outer.complete()
        #expect(recorder.isCompleted)
    }

    @Test func innerEventsFromSeveralThreadsAreSerialised() async {
        let count = 5_000
        let subjects = [Subject<Int>(), Subject<Int>()]
        let output = OverlapRecorder<Int>()
        ImmediateScheduler.shared.performAsCurrent {
            _ = Signal.from([0, 1]).bind { { index, _ in subjects[index] } }.subscribe(output)
        }
        await withTaskGroup(of: Void.self) { group in
            for part in 0..<2 {
                group.addTask {
                    for value in 0..<count { subjects[part].sendNext(part * count + value) }
                }
            }
        }
        #expect(output.overlaps == 0)
        #expect(output.recorder.values.count == 2 * count)
        #expect(Set(output.recorder.values).count == 2 * count)
    }
}

@Suite struct ConcatTests {
    @Test func sendsOtherAfterSelfCompletes() {
        let first = ManualSource<Int>()
        let second = ManualSource<Int>()
        let (recorder, _) = record(first.signal.concat(second.signal))
        first.send(1, 2)
        #expect(second.subscribeCount == 0)
        first.complete()
        #expect(second.subscribeCount == 1)
        second.send(3)
        second.complete()
        #expect(recorder.values == [1, 2, 3])
        #expect(recorder.isCompleted)
    }

    @Test func errorOfSelfSkipsOther() {
        let second = ManualSource<Int>()
        let (recorder, _) = record(Signal<Int>.error(TestError(3)).concat(second.signal))
        #expect(recorder.error as? TestError == TestError(3))
        #expect(second.subscribeCount == 0)
    }

    @Test func errorOfOtherIsSent() {
        let (recorder, _) = record(Signal.just(1).concat(Signal.error(TestError(5))))
        #expect(recorder.values == [1])
        #expect(recorder.error as? TestError == TestError(5))
    }

    @Test func disposingDisposesTheLiveSubscription() {
        expectDisposalReachesSource(sending: [1]) { $0.concat(Signal.just(2)) }
        let second = ManualSource<Int>()
        let (recorder, disposable) = record(Signal.just(1).concat(second.signal))
        #expect(second.liveCount == 1)
        disposable.dispose()
        #expect(second.isDisposed)
        second.sendToAll([2])
        #expect(recorder.values == [1])
        #expect(!recorder.isTerminated)
    }
}
