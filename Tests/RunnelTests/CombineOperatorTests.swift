import RunnelTestSupport
import Testing

@testable import Runnel

@Suite struct CombineLatestTests {
    @Test func pairsLatestValuesOnceBothHaveSent() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<String>()
            let recorder = Recorder<(Int, String)>()
            a.signal.combineLatest(with: b.signal).subscribe(recorder)
            a.send(1)
            a.send(2)
            #expect(recorder.values.isEmpty)
            b.send("x")
            a.send(3)
            b.send("y")
            #expect(recorder.values.map { "\($0.0)\($0.1)" } == ["2x", "3x", "3y"])
        }
    }

    @Test func completesOnlyWhenBothComplete() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<(Int, Int)>()
            a.signal.combineLatest(with: b.signal).subscribe(recorder)
            a.send(1)
            b.send(10)
            a.complete()
            #expect(!recorder.isCompleted)
            b.send(11)
            #expect(recorder.values.map { $0.1 } == [10, 11])
            b.complete()
            #expect(recorder.isCompleted)
            #expect(recorder.events.count == 3)
        }
    }

    @Test func errorIsSentOnAndDisposesTheOther() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<(Int, Int)>()
            a.signal.combineLatest(with: b.signal).subscribe(recorder)
            b.fail(TestError(7))
            #expect(recorder.error as? TestError == TestError(7))
            #expect(!a.isSubscribed)
            a.send(1)
            #expect(recorder.events.count == 1)
        }
    }

    @Test func disposingDisposesEverySource() {
        inline {
            let sources = (0..<3).map { _ in SignalProbe<Int>() }
            let recorder = Recorder<[Int]>()
            let subscription = Signal.combineLatest(sources.map(\.signal)).subscribe(recorder)
            #expect(sources.allSatisfy { $0.isSubscribed })
            subscription.dispose()
            #expect(sources.allSatisfy { !$0.isSubscribed })
            for source in sources { source.send(1) }
            #expect(recorder.events.isEmpty)
        }
    }

    @Test func arrayFormAndReduce() {
        inline {
            let sources = (0..<3).map { _ in Subject<Int>() }
            let arrays = Recorder<[Int]>()
            let sums = Recorder<Int>()
            Signal.combineLatest(sources).subscribe(arrays)
            Signal.combineLatest(sources, reduce: { $0.reduce(0, +) }).subscribe(sums)
            sources[0].sendNext(1)
            sources[1].sendNext(2)
            sources[2].sendNext(3)
            sources[1].sendNext(20)
            #expect(arrays.values == [[1, 2, 3], [1, 20, 3]])
            #expect(sums.values == [6, 24])
            for source in sources { source.sendCompleted() }
            #expect(arrays.isCompleted && sums.isCompleted)
        }
    }

    @Test func emptyArrayCompletesAtOnce() {
        inline {
            let recorder = Recorder<[Int]>()
            Signal.combineLatest([Signal<Int>]()).subscribe(recorder)
            #expect(recorder.isCompleted && recorder.values.isEmpty)
        }
    }
}

@Suite struct ZipTests {
    @Test func pairsNthValues() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<String>()
            let recorder = Recorder<(Int, String)>()
            a.signal.zip(with: b.signal).subscribe(recorder)
            a.send(1)
            a.send(2)
            a.send(3)
            b.send("x")
            b.send("y")
            #expect(recorder.values.map { "\($0.0)\($0.1)" } == ["1x", "2y"])
        }
    }

    @Test func completesAsSoonAsNoPairIsPossible() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<(Int, Int)>()
            a.signal.zip(with: b.signal).subscribe(recorder)
            a.send(1)
            a.send(2)
            a.complete()
            // a's 2 is still waiting for a partner.
            #expect(!recorder.isCompleted)
            b.send(10)
            #expect(!recorder.isCompleted)
            b.send(20)
            // a's buffer is now empty and a has completed: no further pair, although b lives on.
            #expect(recorder.isCompleted)
            #expect(recorder.values.map { $0.0 * 100 + $0.1 } == [110, 220])
            #expect(!b.isSubscribed)
        }
    }

    @Test func completesAtOnceWhenACompletedSideHasNothingWaiting() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<(Int, Int)>()
            a.signal.zip(with: b.signal).subscribe(recorder)
            a.send(1)
            a.send(2)
            b.complete()
            #expect(recorder.isCompleted)
            #expect(recorder.values.isEmpty)
            #expect(!a.isSubscribed)
        }
    }

    @Test func errorIsSentOnAndDisposesTheOther() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<(Int, Int)>()
            a.signal.zip(with: b.signal).subscribe(recorder)
            a.fail(TestError(2))
            #expect(recorder.error as? TestError == TestError(2))
            #expect(!b.isSubscribed)
        }
    }

    @Test func disposingDisposesEverySource() {
        inline {
            let sources = (0..<3).map { _ in SignalProbe<Int>() }
            let recorder = Recorder<[Int]>()
            let subscription = Signal.zip(sources.map(\.signal)).subscribe(recorder)
            subscription.dispose()
            #expect(sources.allSatisfy { !$0.isSubscribed && $0.subscriptions == 1 })
            for source in sources { source.send(1) }
            #expect(recorder.events.isEmpty)
        }
    }

    @Test func arrayFormAndReduce() {
        inline {
            let arrays = Recorder<[Int]>()
            let sums = Recorder<Int>()
            let sources = [[1, 2, 3].signal, [10, 20].signal, [100, 200, 300].signal]
            Signal.zip(sources).subscribe(arrays)
            Signal.zip(sources, reduce: { $0.reduce(0, +) }).subscribe(sums)
            #expect(arrays.values == [[1, 10, 100], [2, 20, 200]])
            #expect(arrays.isCompleted)
            #expect(sums.values == [111, 222])
            #expect(sums.isCompleted)
        }
    }

    @Test func emptyArrayCompletesAtOnce() {
        inline {
            let recorder = Recorder<[Int]>()
            Signal.zip([Signal<Int>]()).subscribe(recorder)
            #expect(recorder.isCompleted && recorder.values.isEmpty)
        }
    }
}

@Suite struct MergeTests {
    @Test func sendsValuesAsTheyArriveAndCompletesWhenAllComplete() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            a.signal.merge(b.signal).subscribe(recorder)
            a.send(1)
            b.send(2)
            a.send(3)
            a.complete()
            #expect(!recorder.isCompleted)
            b.send(4)
            b.complete()
            #expect(recorder.values == [1, 2, 3, 4])
            #expect(recorder.isCompleted)
        }
    }

    @Test func errorIsSentOnAndDisposesTheOthers() {
        inline {
            let sources = (0..<3).map { _ in SignalProbe<Int>() }
            let recorder = Recorder<Int>()
            Signal.merge(sources.map(\.signal)).subscribe(recorder)
            sources[1].fail(TestError(3))
            #expect(recorder.error as? TestError == TestError(3))
            #expect(sources.allSatisfy { !$0.isSubscribed })
            sources[0].send(1)
            #expect(recorder.events.count == 1)
        }
    }

    @Test func doesNotSubscribeFurtherSignalsAfterAnError() {
        inline {
            let later = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            Signal.merge([Signal.just(1), Signal.error(TestError(4)), later.signal]).subscribe(recorder)
            #expect(recorder.values == [1])
            #expect(recorder.error as? TestError == TestError(4))
            #expect(later.subscriptions == 0)
        }
    }

    @Test func disposingDisposesEverySource() {
        inline {
            let sources = (0..<3).map { _ in SignalProbe<Int>() }
            let recorder = Recorder<Int>()
            let subscription = Signal.merge(sources.map(\.signal)).subscribe(recorder)
            #expect(sources.allSatisfy { $0.isSubscribed })
            subscription.dispose()
            #expect(sources.allSatisfy { !$0.isSubscribed })
            sources[2].send(1)
            #expect(recorder.events.isEmpty)
        }
    }

    @Test func emptyArrayCompletesAtOnce() {
        inline {
            let recorder = Recorder<Int>()
            Signal.merge([]).subscribe(recorder)
            #expect(recorder.isCompleted)
        }
    }
}

@Suite struct ConcatArrayTests {
    @Test func subscribesEachSignalAfterThePreviousCompletes() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            Signal.concat([a.signal, b.signal, Signal.just(9)]).subscribe(recorder)
            #expect(a.subscriptions == 1 && b.subscriptions == 0)
            a.send(1)
            b.send(100)  // not subscribed yet: lost
            a.complete()
            #expect(b.subscriptions == 1)
            b.send(2)
            #expect(!recorder.isCompleted)
            b.complete()
            #expect(recorder.values == [1, 2, 9])
            #expect(recorder.isCompleted)
        }
    }

    @Test func errorStopsTheSequence() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            a.signal.concat(b.signal).subscribe(recorder)
            a.send(1)
            a.fail(TestError(5))
            #expect(recorder.values == [1])
            #expect(recorder.error as? TestError == TestError(5))
            #expect(b.subscriptions == 0)
        }
    }

    @Test func disposingDisposesTheRunningSignalAndStops() {
        inline {
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            let subscription = a.signal.concat(b.signal).subscribe(recorder)
            subscription.dispose()
            #expect(!a.isSubscribed)
            a.complete()
            #expect(b.subscriptions == 0)
            #expect(recorder.events.isEmpty)
        }
    }

    @Test func longChainsOfImmediateSignalsTakeNoStack() {
        inline {
            let recorder = Recorder<Int>()
            Signal.concat((0..<20_000).map { Signal.just($0) }).subscribe(recorder)
            #expect(recorder.values.count == 20_000)
            #expect(recorder.values.last == 19_999)
            #expect(recorder.isCompleted)
        }
    }
}

@Suite struct SampleTests {
    @Test func sendsLatestValueAtEachSamplerValueEvenIfUnchanged() {
        inline {
            let source = SignalProbe<Int>()
            let sampler = SignalProbe<Void>()
            let recorder = Recorder<Int>()
            source.signal.sample(sampler.signal).subscribe(recorder)
            sampler.send(())  // nothing yet
            source.send(1)
            source.send(2)
            sampler.send(())
            sampler.send(())
            source.send(3)
            sampler.send(())
            #expect(recorder.values == [2, 2, 3])
        }
    }

    @Test func completesWhenEitherCompletes() {
        inline {
            let source = SignalProbe<Int>()
            let sampler = SignalProbe<Void>()
            let recorder = Recorder<Int>()
            source.signal.sample(sampler.signal).subscribe(recorder)
            sampler.complete()
            #expect(recorder.isCompleted)
            #expect(!source.isSubscribed)

            let source2 = SignalProbe<Int>()
            let sampler2 = SignalProbe<Void>()
            let recorder2 = Recorder<Int>()
            source2.signal.sample(sampler2.signal).subscribe(recorder2)
            source2.complete()
            #expect(recorder2.isCompleted)
            #expect(!sampler2.isSubscribed)
        }
    }

    @Test func errorFromEitherIsSentOn() {
        inline {
            let source = SignalProbe<Int>()
            let sampler = SignalProbe<Void>()
            let recorder = Recorder<Int>()
            source.signal.sample(sampler.signal).subscribe(recorder)
            sampler.fail(TestError(6))
            #expect(recorder.error as? TestError == TestError(6))
            #expect(!source.isSubscribed)
        }
    }

    @Test func disposingDisposesBoth() {
        inline {
            let source = SignalProbe<Int>()
            let sampler = SignalProbe<Void>()
            let recorder = Recorder<Int>()
            let subscription = source.signal.sample(sampler.signal).subscribe(recorder)
            source.send(1)
            subscription.dispose()
            #expect(!source.isSubscribed && !sampler.isSubscribed)
            sampler.send(())
            #expect(recorder.events.isEmpty)
        }
    }
}
