import Dispatch
import RunnelTestSupport
import Testing

@testable import Runnel

@Suite struct SignalTests {
    @Test func createSendsAndDisposesOnTermination() {
        let cleaned = Locked(false)
        let signal = Signal<Int>.create { subscriber in
            subscriber.sendNext(1)
            subscriber.sendNext(2)
            subscriber.sendCompleted()
            subscriber.sendNext(3)  // after the terminal event: dropped
            return Disposable { cleaned.withLock { $0 = true } }
        }
        let recorder = Recorder<Int>()
        inline { signal.subscribe(recorder) }
        #expect(recorder.eventDescriptions == ["next(1)", "next(2)", "completed"])
        #expect(cleaned.withLock { $0 })
    }

    @Test func createDropsEventsAfterDisposal() {
        let held = Locked<(any Subscriber<Int>)?>(nil)
        let signal = Signal<Int>.create { subscriber in
            held.withLock { $0 = subscriber }
            return nil
        }
        let recorder = Recorder<Int>()
        let subscription = inline { signal.subscribe(recorder) }
        let subscriber = held.withLock { $0 }!
        subscriber.sendNext(1)
        subscription.dispose()
        subscriber.sendNext(2)
        subscriber.sendCompleted()
        #expect(recorder.eventDescriptions == ["next(1)"])
    }

    @Test func constructors() {
        let just = Recorder<Int>()
        let empty = Recorder<Int>()
        let never = Recorder<Int>()
        let failing = Recorder<Int>()
        let sequence = Recorder<Int>()
        inline {
            Signal<Int>.just(7).subscribe(just)
            Signal<Int>.empty.subscribe(empty)
            Signal<Int>.never.subscribe(never)
            Signal<Int>.error(TestError(3)).subscribe(failing)
            [1, 2, 3].signal.subscribe(sequence)
        }
        #expect(just.eventDescriptions == ["next(7)", "completed"])
        #expect(empty.eventDescriptions == ["completed"])
        #expect(never.events.isEmpty)
        #expect(failing.eventDescriptions == ["error(TestError(3))"])
        #expect(sequence.eventDescriptions == ["next(1)", "next(2)", "next(3)", "completed"])
    }

    @Test func fromStopsOnceDisposed() {
        let subscriberBox = Locked<BlockSubscriber<Int>?>(nil)
        let seen = Locked<[Int]>([])
        let subscriber = BlockSubscriber<Int>(next: { value in
            seen.withLock { $0.append(value) }
            if value == 3 { subscriberBox.withLock { $0 }?.disposable.dispose() }
        })
        subscriberBox.withLock { $0 = subscriber }
        inline { _ = Signal.from(1...1_000_000).subscribe(subscriber) }
        #expect(seen.withLock { $0 } == [1, 2, 3])
        subscriberBox.withLock { $0 = nil }
    }

    @Test func deferredRunsFactoryPerSubscription() {
        let calls = Locked(0)
        let signal = Signal<Int>.deferred {
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            return .just(call)
        }
        #expect(calls.withLock { $0 } == 0)
        let first = Recorder<Int>()
        let second = Recorder<Int>()
        inline {
            signal.subscribe(first)
            signal.subscribe(second)
        }
        #expect(first.values == [1])
        #expect(second.values == [2])
    }

    @Test func namesAreDroppedWhenDebugNamesAreDisabled() {
        let signal = Signal<Int>.just(1)
        let named = signal.named("answer")
        if SignalNames.enabled {
            #expect(named.name == "answer")
            #expect(named.description == "<Signal answer>")
        } else {
            #expect(named === signal)
            #expect(named.name.isEmpty)
            #expect(signal.description == "<Signal<Int>>")
        }
    }

    @Test func subscriptionRunsInlineWithACurrentScheduler() {
        let scheduler = TestScheduler()
        let ranOn = Locked<(any Scheduler)?>(nil)
        let signal = Signal<Int>.create { _ in
            ranOn.withLock { $0 = currentScheduler }
            return nil
        }
        onTestScheduler(scheduler) { _ = signal.subscribe(next: { _ in }) }
        #expect(ranOn.withLock { $0 } === scheduler)
    }

    @Test func subscriptionRunsInBackgroundWithoutACurrentScheduler() {
        #expect(currentScheduler == nil)
        let ranOn = Locked<(any Scheduler)?>(nil)
        let ran = DispatchSemaphore(value: 0)
        let signal = Signal<Int>.create { _ in
            ranOn.withLock { $0 = currentScheduler }
            ran.signal()
            return nil
        }
        let subscription = signal.subscribe(next: { _ in })
        ran.wait()
        #expect(ranOn.withLock { $0 } === QueueScheduler.background)
        subscription.dispose()
    }

    @Test func blockSubscriberSendsNothingAfterTerminal() {
        let recorder = Locked<[String]>([])
        let subscriber = BlockSubscriber<Int>(
            next: { value in recorder.withLock { $0.append("next(\(value))") } },
            error: { _ in recorder.withLock { $0.append("error") } },
            completed: { recorder.withLock { $0.append("completed") } })
        subscriber.sendNext(1)
        subscriber.sendCompleted()
        subscriber.sendNext(2)
        subscriber.sendError(TestError())
        subscriber.sendCompleted()
        #expect(recorder.withLock { $0 } == ["next(1)", "completed"])
        #expect(subscriber.disposable.isDisposed)
    }

    @Test func blockSubscriberSendsNothingAfterDispose() {
        let count = Locked(0)
        let subscriber = BlockSubscriber<Int>(next: { _ in count.withLock { $0 += 1 } })
        subscriber.sendNext(1)
        subscriber.disposable.dispose()
        subscriber.sendNext(2)
        #expect(count.withLock { $0 } == 1)
    }

    @Test func blockSubscriberPurgesFinishedSubscriptions() {
        let count = Locked(0)
        let subscriber = BlockSubscriber<Int>(next: { _ in count.withLock { $0 += 1 } })
        let signal = Signal<Int>.create { subscriber in
            subscriber.sendNext(1)
            return nil
        }
        inline {
            for _ in 0..<10_000 {
                let subscription = signal.subscribe(subscriber)
                subscription.dispose()
            }
        }
        #expect(count.withLock { $0 } == 10_000)
        #expect(subscriber.disposable.count <= 2)
        #expect(!subscriber.disposable.isDisposed)
    }
}
