import RunnelTestSupport
import Testing

@testable import Runnel

// then, catch, takeUntil and takeUntilReplacement: operators that hand a subscription from one
// signal to another.
@Suite struct ThenTests {
    @Test func ignoresValuesThenContinuesWithTheBlocksSignal() {
        inline {
            let first = SignalProbe<Int>()
            let second = SignalProbe<String>()
            let calls = Locked(0)
            let recorder = Recorder<String>()
            first.signal.then {
                calls.withLock { $0 += 1 }
                return second.signal
            }.subscribe(recorder)
            first.send(1)
            #expect(calls.withLock { $0 } == 0)
            first.complete()
            #expect(calls.withLock { $0 } == 1)
            second.send("a")
            second.complete()
            #expect(recorder.values == ["a"])
            #expect(recorder.isCompleted)
        }
    }

    @Test func errorIsSentOnAndTheBlockNeverRuns() {
        inline {
            let first = SignalProbe<Int>()
            let calls = Locked(0)
            let recorder = Recorder<Int>()
            first.signal.then {
                calls.withLock { $0 += 1 }
                return Signal.just(1)
            }.subscribe(recorder)
            first.fail(TestError(5))
            #expect(recorder.error as? TestError == TestError(5))
            #expect(calls.withLock { $0 } == 0)
        }
    }

    @Test func disposingDisposesWhicheverSignalIsSubscribed() {
        inline {
            let first = SignalProbe<Int>()
            let second = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            let subscription = first.signal.then { second.signal }.subscribe(recorder)
            first.complete()
            #expect(second.isSubscribed)
            subscription.dispose()
            #expect(!second.isSubscribed)
            second.send(1)
            #expect(recorder.events.isEmpty)

            let third = SignalProbe<Int>()
            let early = third.signal.then { Signal.just(1) }.subscribe(Recorder<Int>())
            early.dispose()
            #expect(!third.isSubscribed)
        }
    }
}

@Suite struct CatchTests {
    @Test func continuesWithTheHandlersSignal() {
        inline {
            let source = SignalProbe<Int>()
            let backup = SignalProbe<Int>()
            let seen = Locked<[Int]>([])
            let recorder = Recorder<Int>()
            source.signal.catch { error in
                seen.withLock { $0.append((error as? TestError)?.code ?? -1) }
                return backup.signal
            }.subscribe(recorder)
            source.send(1)
            source.fail(TestError(9))
            #expect(seen.withLock { $0 } == [9])
            backup.send(2)
            backup.complete()
            #expect(recorder.values == [1, 2])
            #expect(recorder.isCompleted)
        }
    }

    @Test func completionPassesThrough() {
        inline {
            let recorder = Recorder<Int>()
            Signal.from([1, 2]).catchTo(Signal.just(99)).subscribe(recorder)
            #expect(recorder.values == [1, 2])
            #expect(recorder.isCompleted)
        }
    }

    @Test func errorOfTheReplacementIsSentOn() {
        inline {
            let recorder = Recorder<Int>()
            Signal<Int>.error(TestError(1)).catchTo(Signal.error(TestError(2))).subscribe(recorder)
            #expect(recorder.error as? TestError == TestError(2))
        }
    }

    @Test func disposingDisposesWhicheverSignalIsSubscribed() {
        inline {
            let source = SignalProbe<Int>()
            let backup = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            let subscription = source.signal.catchTo(backup.signal).subscribe(recorder)
            #expect(source.isSubscribed)
            source.fail(TestError())
            #expect(backup.isSubscribed)
            subscription.dispose()
            #expect(!backup.isSubscribed)
            backup.send(1)
            #expect(recorder.events.isEmpty)
        }
    }
}

@Suite struct TakeUntilTests {
    @Test func completesOnTheOthersFirstValue() {
        inline {
            let source = SignalProbe<Int>()
            let trigger = SignalProbe<Void>()
            let recorder = Recorder<Int>()
            source.signal.take(until: trigger.signal).subscribe(recorder)
            source.send(1)
            trigger.send(())
            source.send(2)
            #expect(recorder.values == [1])
            #expect(recorder.isCompleted)
            #expect(!source.isSubscribed && !trigger.isSubscribed)
        }
    }

    @Test func completesOnTheOthersCompletion() {
        inline {
            let source = SignalProbe<Int>()
            let trigger = SignalProbe<Void>()
            let recorder = Recorder<Int>()
            source.signal.take(until: trigger.signal).subscribe(recorder)
            trigger.complete()
            #expect(recorder.isCompleted)
            #expect(!source.isSubscribed)
        }
    }

    @Test func ignoresTheOthersError() {
        inline {
            let source = SignalProbe<Int>()
            let trigger = SignalProbe<Void>()
            let recorder = Recorder<Int>()
            source.signal.take(until: trigger.signal).subscribe(recorder)
            trigger.fail(TestError())
            source.send(1)
            source.complete()
            #expect(recorder.values == [1])
            #expect(recorder.error == nil)
            #expect(recorder.isCompleted)
        }
    }

    @Test func sourceErrorIsSentOn() {
        inline {
            let source = SignalProbe<Int>()
            let trigger = SignalProbe<Void>()
            let recorder = Recorder<Int>()
            source.signal.take(until: trigger.signal).subscribe(recorder)
            source.fail(TestError(8))
            #expect(recorder.error as? TestError == TestError(8))
            #expect(!trigger.isSubscribed)
        }
    }

    @Test func triggerFiringOnSubscriptionSquelchesTheSource() {
        inline {
            let recorder = Recorder<Int>()
            let source = SignalProbe<Int>()
            Signal.from([1, 2, 3]).take(until: Signal.just(())).subscribe(recorder)
            source.signal.take(until: Signal<Void>.empty).subscribe(Recorder<Int>())
            #expect(recorder.values.isEmpty)
            #expect(recorder.isCompleted)
            #expect(source.subscriptions == 0)
        }
    }

    @Test func disposingDisposesBoth() {
        inline {
            let source = SignalProbe<Int>()
            let trigger = SignalProbe<Void>()
            let recorder = Recorder<Int>()
            let subscription = source.signal.take(until: trigger.signal).subscribe(recorder)
            subscription.dispose()
            #expect(!source.isSubscribed && !trigger.isSubscribed)
            source.send(1)
            #expect(recorder.events.isEmpty)
        }
    }
}

@Suite struct TakeUntilReplacementTests {
    @Test func switchesToTheReplacementAtItsFirstEvent() {
        inline {
            let source = SignalProbe<Int>()
            let replacement = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            source.signal.take(untilReplacement: replacement.signal).subscribe(recorder)
            source.send(1)
            replacement.send(10)
            #expect(!source.isSubscribed)
            source.send(2)
            replacement.send(11)
            replacement.complete()
            #expect(recorder.values == [1, 10, 11])
            #expect(recorder.isCompleted)
        }
    }

    @Test func sourceCompletionWaitsForTheReplacement() {
        inline {
            let source = SignalProbe<Int>()
            let replacement = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            source.signal.take(untilReplacement: replacement.signal).subscribe(recorder)
            source.send(1)
            source.complete()
            #expect(!recorder.isCompleted)
            replacement.send(2)
            replacement.complete()
            #expect(recorder.values == [1, 2])
            #expect(recorder.isCompleted)
        }
    }

    @Test func errorsOfEitherAreSentOn() {
        inline {
            let source = SignalProbe<Int>()
            let replacement = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            source.signal.take(untilReplacement: replacement.signal).subscribe(recorder)
            source.fail(TestError(1))
            #expect(recorder.error as? TestError == TestError(1))
            #expect(!replacement.isSubscribed)

            let source2 = SignalProbe<Int>()
            let recorder2 = Recorder<Int>()
            source2.signal.take(untilReplacement: Signal.error(TestError(2))).subscribe(recorder2)
            #expect(recorder2.error as? TestError == TestError(2))
            #expect(source2.subscriptions == 0)
        }
    }

    @Test func disposingDisposesBoth() {
        inline {
            let source = SignalProbe<Int>()
            let replacement = SignalProbe<Int>()
            let recorder = Recorder<Int>()
            let subscription = source.signal.take(untilReplacement: replacement.signal).subscribe(recorder)
            subscription.dispose()
            #expect(!source.isSubscribed && !replacement.isSubscribed)
            replacement.send(1)
            #expect(recorder.events.isEmpty)
        }
    }
}
