import RunnelTestSupport
import Testing

@testable import Runnel

@Suite struct FlattenTests {
    @Test func flatMapSendsTheValuesOfEveryMappedSignal() {
        inline {
            let outer = SignalProbe<Int>()
            let inners = (0..<2).map { _ in SignalProbe<String>() }
            let recorder = Recorder<String>()
            outer.signal.flatMap { inners[$0].signal }.subscribe(recorder)
            outer.send(0)
            inners[0].send("a")
            outer.send(1)
            inners[1].send("b")
            inners[0].send("c")
            #expect(recorder.values == ["a", "b", "c"])
        }
    }

    @Test func completesWhenOuterAndEveryInnerHaveCompleted() {
        inline {
            let outer = SignalProbe<Int>()
            let inners = (0..<2).map { _ in SignalProbe<Int>() }
            let recorder = Recorder<Int>()
            outer.signal.flatMap { inners[$0].signal }.subscribe(recorder)
            outer.send(0)
            outer.send(1)
            inners[0].complete()
            outer.complete()
            #expect(!recorder.isCompleted)
            inners[1].send(5)
            inners[1].complete()
            #expect(recorder.values == [5])
            #expect(recorder.isCompleted)
        }
    }

    @Test func innerErrorIsSentOnAndDisposesEverything() {
        inline {
            let outer = SignalProbe<Int>()
            let inners = (0..<2).map { _ in SignalProbe<Int>() }
            let recorder = Recorder<Int>()
            outer.signal.flatMap { inners[$0].signal }.subscribe(recorder)
            outer.send(0)
            outer.send(1)
            inners[1].fail(TestError(1))
            #expect(recorder.error as? TestError == TestError(1))
            #expect(!outer.isSubscribed && !inners[0].isSubscribed)
            inners[0].send(1)
            #expect(recorder.events.count == 1)
        }
    }

    @Test func outerErrorIsSentOn() {
        inline {
            let outer = SignalProbe<Int>()
            let inner = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            outer.signal.flatMap { _ in inner.signal }.subscribe(recorder)
            outer.send(0)
            outer.fail(TestError(2))
            #expect(recorder.error as? TestError == TestError(2))
            #expect(!inner.isSubscribed)
        }
    }

    @Test func disposingDisposesOuterAndInners() {
        inline {
            let outer = SignalProbe<Int>()
            let inners = (0..<2).map { _ in SignalProbe<Int>() }
            let recorder = Recorder<Int>()
            let subscription = outer.signal.flatMap { inners[$0].signal }.subscribe(recorder)
            outer.send(0)
            outer.send(1)
            subscription.dispose()
            #expect(!outer.isSubscribed)
            #expect(inners.allSatisfy { $0.subscriptions == 1 && !$0.isSubscribed })
            inners[0].send(1)
            #expect(recorder.events.isEmpty)
        }
    }

    @Test func maxConcurrentQueuesExtraInners() {
        inline {
            let outer = Subject<Signal<Int>>()
            let inners = (0..<4).map { _ in SignalProbe<Int>() }
            let recorder = Recorder<Int>()
            outer.flatten(maxConcurrent: 2).subscribe(recorder)
            for inner in inners { outer.sendNext(inner.signal) }
            outer.sendCompleted()
            #expect(inners.map(\.subscriptions) == [1, 1, 0, 0])
            inners[2].send(100)  // queued, not subscribed: lost
            inners[1].complete()
            #expect(inners.map(\.subscriptions) == [1, 1, 1, 0])
            inners[2].send(2)
            inners[0].complete()
            #expect(inners.map(\.subscriptions) == [1, 1, 1, 1])
            inners[3].send(3)
            inners[2].complete()
            #expect(!recorder.isCompleted)
            inners[3].complete()
            #expect(recorder.values == [2, 3])
            #expect(recorder.isCompleted)
        }
    }

    @Test func flattenWithoutLimitSubscribesEveryInnerAtOnce() {
        inline {
            let outer = Subject<Signal<Int>>()
            let inners = (0..<5).map { _ in SignalProbe<Int>() }
            outer.flatten().subscribe(Recorder<Int>())
            for inner in inners { outer.sendNext(inner.signal) }
            #expect(inners.allSatisfy { $0.isSubscribed })
        }
    }

    @Test func concatOfSignalsKeepsTheirOrder() {
        inline {
            let outer = Subject<Signal<Int>>()
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            outer.concat().subscribe(recorder)
            outer.sendNext(a.signal)
            outer.sendNext(b.signal)
            outer.sendNext(Signal.from([7, 8]))
            outer.sendCompleted()
            #expect(b.subscriptions == 0)
            a.send(1)
            a.complete()
            b.send(2)
            b.complete()
            #expect(recorder.values == [1, 2, 7, 8])
            #expect(recorder.isCompleted)
        }
    }
}

@Suite struct SwitchToLatestTests {
    @Test func followsTheLatestInnerAndDisposesThePrevious() {
        inline {
            let outer = Subject<Signal<Int>>()
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            outer.switchToLatest().subscribe(recorder)
            outer.sendNext(a.signal)
            a.send(1)
            outer.sendNext(b.signal)
            #expect(!a.isSubscribed && b.isSubscribed)
            a.send(2)
            b.send(3)
            #expect(recorder.values == [1, 3])
        }
    }

    @Test func doesNotCompleteWhenOnlyTheOuterCompletes() {
        inline {
            let outer = Subject<Signal<Int>>()
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            outer.switchToLatest().subscribe(recorder)
            outer.sendNext(a.signal)
            outer.sendNext(b.signal)
            outer.sendCompleted()
            #expect(!recorder.isCompleted)
            b.send(4)
            b.complete()
            #expect(recorder.values == [4])
            #expect(recorder.isCompleted)
        }
    }

    @Test func completionOfAReplacedInnerDoesNotCount() {
        inline {
            let outer = Subject<Signal<Int>>()
            let b = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            outer.switchToLatest().subscribe(recorder)
            outer.sendNext(Signal.just(1))
            outer.sendNext(b.signal)
            outer.sendCompleted()
            #expect(!recorder.isCompleted)
            b.complete()
            #expect(recorder.isCompleted)
        }
    }

    @Test func completesWhenOuterCompletesWithoutInners() {
        inline {
            let recorder = Recorder<Int>()
            Signal<Signal<Int>>.empty.switchToLatest().subscribe(recorder)
            #expect(recorder.isCompleted)
        }
    }

    @Test func innerErrorIsSentOn() {
        inline {
            let outer = SignalProbe<Signal<Int>>()
            let a = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            outer.signal.switchToLatest().subscribe(recorder)
            outer.send(a.signal)
            a.fail(TestError(3))
            #expect(recorder.error as? TestError == TestError(3))
            #expect(!outer.isSubscribed)
        }
    }

    @Test func disposingDisposesOuterAndCurrentInner() {
        inline {
            let outer = SignalProbe<Signal<Int>>()
            let a = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            let subscription = outer.signal.switchToLatest().subscribe(recorder)
            outer.send(a.signal)
            subscription.dispose()
            #expect(!outer.isSubscribed && !a.isSubscribed)
            a.send(1)
            #expect(recorder.events.isEmpty)
        }
    }
}

@Suite struct SwitchAndIfTests {
    @Test func switchesToTheCaseOfEachKey() {
        inline {
            let keys = Subject<String>()
            let a = SignalProbe<Int>()
            let b = SignalProbe<Int>()
            let other = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            Signal.switch(keys, cases: ["a": a.signal, "b": b.signal], default: other.signal).subscribe(recorder)
            keys.sendNext("a")
            a.send(1)
            keys.sendNext("b")
            a.send(2)
            b.send(3)
            keys.sendNext("zzz")
            #expect(!b.isSubscribed)
            other.send(4)
            keys.sendCompleted()
            other.complete()
            #expect(recorder.values == [1, 3, 4])
            #expect(recorder.isCompleted)
        }
    }

    @Test func keyWithNoCaseAndNoDefaultFails() {
        inline {
            let keys = Subject<Int>()
            let recorder = Recorder<Int>()
            Signal.switch(keys, cases: [1: Signal.just(10)]).subscribe(recorder)
            keys.sendNext(1)
            keys.sendNext(2)
            #expect(recorder.values == [10])
            #expect(recorder.error as? RunnelError == RunnelError.noCase("2"))
        }
    }

    @Test func switchDisposalDisposesKeysAndCurrentCase() {
        inline {
            let keys = SignalProbe<Int>()
            let a = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            let subscription = Signal.switch(keys.signal, cases: [1: a.signal]).subscribe(recorder)
            keys.send(1)
            subscription.dispose()
            #expect(!keys.isSubscribed && !a.isSubscribed)
        }
    }

    @Test func ifFollowsTheBooleans() {
        inline {
            let bools = SignalProbe<Bool>()
            let yes = SignalProbe<String>()
            let no = SignalProbe<String>()
            let recorder = Recorder<String>()
            let subscription = Signal.if(bools.signal, then: yes.signal, else: no.signal).subscribe(recorder)
            bools.send(true)
            yes.send("y")
            no.send("lost")
            bools.send(false)
            yes.send("lost")
            no.send("n")
            #expect(recorder.values == ["y", "n"])
            no.fail(TestError(4))
            #expect(recorder.error as? TestError == TestError(4))
            #expect(!bools.isSubscribed)
            subscription.dispose()
        }
    }

    @Test func ifCompletesWithBoolsAndBranch() {
        inline {
            let bools = SignalProbe<Bool>()
            let recorder = Recorder<Int>()
            Signal.if(bools.signal, then: Signal.just(1), else: Signal.just(0)).subscribe(recorder)
            bools.send(false)
            bools.send(true)
            bools.complete()
            #expect(recorder.values == [0, 1])
            #expect(recorder.isCompleted)
        }
    }
}
