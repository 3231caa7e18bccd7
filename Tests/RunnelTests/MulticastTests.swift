import RunnelTestSupport
import Testing

@testable import Runnel

@Suite struct MulticastConnectionTests {
    @Test func connectSharesOneSubscriptionAmongSubscribers() {
        inline {
            let source = SignalProbe<Int>()
            let connection = source.signal.publish()
            let first = Recorder<Int>()
            let second = Recorder<Int>()
            connection.signal.subscribe(first)
            connection.signal.subscribe(second)
            #expect(source.subscriptions == 0)
            connection.connect()
            #expect(source.subscriptions == 1)
            source.send(1)
            let late = Recorder<Int>()
            connection.signal.subscribe(late)
            source.send(2)
            source.complete()
            #expect(first.values == [1, 2] && first.isCompleted)
            #expect(second.values == [1, 2] && second.isCompleted)
            #expect(late.values == [2] && late.isCompleted)
        }
    }

    @Test func errorReachesEverySubscriber() {
        inline {
            let source = SignalProbe<Int>()
            let connection = source.signal.publish()
            let first = Recorder<Int>()
            let second = Recorder<Int>()
            connection.signal.subscribe(first)
            connection.signal.subscribe(second)
            connection.connect()
            source.fail(TestError(3))
            #expect(first.error as? TestError == TestError(3))
            #expect(second.error as? TestError == TestError(3))
        }
    }

    @Test func connectIsIdempotentAndDoesNotReconnectAfterDisposal() {
        inline {
            let source = SignalProbe<Int>()
            let connection = source.signal.publish()
            let recorder = Recorder<Int>()
            connection.signal.subscribe(recorder)
            let disposable = connection.connect()
            #expect(connection.connect() === disposable)
            #expect(source.subscriptions == 1)
            disposable.dispose()
            #expect(!source.isSubscribed)
            let again = connection.connect()
            #expect(again === disposable)
            #expect(again.isDisposed)
            #expect(source.subscriptions == 1)
            source.send(1)
            #expect(recorder.events.isEmpty)
        }
    }

    @Test func multicastsThroughTheGivenSubject() {
        inline {
            let source = SignalProbe<Int>()
            let connection = source.signal.multicast(BehaviorSubject(0))
            connection.connect()
            source.send(5)
            let recorder = Recorder<Int>()
            connection.signal.subscribe(recorder)
            source.send(6)
            #expect(recorder.values == [5, 6])
        }
    }

    @Test func autoconnectConnectsOnFirstSubscriberAndDisposesAfterTheLast() {
        inline {
            let source = SignalProbe<Int>()
            let shared = source.signal.publish().autoconnect()
            #expect(source.subscriptions == 0)
            let first = Recorder<Int>()
            let second = Recorder<Int>()
            let firstSubscription = shared.subscribe(first)
            #expect(source.subscriptions == 1)
            let secondSubscription = shared.subscribe(second)
            #expect(source.subscriptions == 1)
            source.send(1)
            firstSubscription.dispose()
            #expect(source.isSubscribed)
            source.send(2)
            secondSubscription.dispose()
            #expect(!source.isSubscribed)
            #expect(first.values == [1])
            #expect(second.values == [1, 2])
            // As in ReactiveCocoa, the connection is not made again.
            let third = Recorder<Int>()
            shared.subscribe(third)
            source.send(3)
            #expect(source.subscriptions == 1)
            #expect(third.events.isEmpty)
        }
    }
}

@Suite struct ReplayTests {
    @Test func replaySubscribesAtOnceAndReplaysEverything() {
        inline {
            let source = SignalProbe<Int>()
            let replayed = source.signal.replay()
            #expect(source.subscriptions == 1)
            source.send(1)
            source.send(2)
            let first = Recorder<Int>()
            replayed.subscribe(first)
            source.send(3)
            source.complete()
            let late = Recorder<Int>()
            replayed.subscribe(late)
            #expect(first.values == [1, 2, 3] && first.isCompleted)
            #expect(late.values == [1, 2, 3] && late.isCompleted)
            #expect(source.subscriptions == 1)
        }
    }

    @Test func replayReplaysTheError() {
        inline {
            let replayed = Signal.from([1]).concat(Signal.error(TestError(2))).replay()
            let recorder = Recorder<Int>()
            replayed.subscribe(recorder)
            #expect(recorder.values == [1])
            #expect(recorder.error as? TestError == TestError(2))
        }
    }

    @Test func replayLastReplaysOnlyTheLatestValue() {
        inline {
            let source = SignalProbe<Int>()
            let replayed = source.signal.replayLast()
            source.send(1)
            source.send(2)
            let recorder = Recorder<Int>()
            replayed.subscribe(recorder)
            source.send(3)
            #expect(recorder.values == [2, 3])
        }
    }

    @Test func replayLazilySubscribesOnFirstSubscriptionOnly() {
        inline {
            let source = SignalProbe<Int>()
            let replayed = source.signal.replayLazily()
            #expect(source.subscriptions == 0)
            let first = Recorder<Int>()
            replayed.subscribe(first)
            #expect(source.subscriptions == 1)
            source.send(1)
            let second = Recorder<Int>()
            replayed.subscribe(second)
            source.send(2)
            #expect(source.subscriptions == 1)
            #expect(first.values == [1, 2])
            #expect(second.values == [1, 2])
        }
    }

    @Test func disposingASubscriberStopsItsDeliveryOnly() {
        inline {
            let source = SignalProbe<Int>()
            let replayed = source.signal.replayLazily()
            let first = Recorder<Int>()
            let second = Recorder<Int>()
            let subscription = replayed.subscribe(first)
            replayed.subscribe(second)
            subscription.dispose()
            source.send(1)
            #expect(first.events.isEmpty)
            #expect(second.values == [1])
        }
    }
}

@Suite struct StartTests {
    @Test func startEagerlyRunsTheBlockOnceOnTheSchedulerWithoutSubscribers() {
        let scheduler = TestScheduler()
        let runs = Locked(0)
        let signal = scheduler.performAsCurrent {
            Signal<Int>.startEagerly(on: scheduler) { subscriber in
                runs.withLock { $0 += 1 }
                #expect(currentScheduler === scheduler)
                subscriber.sendNext(1)
                subscriber.sendNext(2)
                subscriber.sendCompleted()
            }
        }
        #expect(runs.withLock { $0 } == 0)
        scheduler.advance()
        #expect(runs.withLock { $0 } == 1)
        let first = Recorder<Int>()
        let second = Recorder<Int>()
        scheduler.performAsCurrent {
            signal.subscribe(first)
            signal.subscribe(second)
        }
        scheduler.run()
        #expect(runs.withLock { $0 } == 1)
        #expect(first.values == [1, 2] && first.isCompleted)
        #expect(second.values == [1, 2] && second.isCompleted)
    }

    @Test func startEagerlyReplaysTheError() {
        let scheduler = TestScheduler()
        let signal = scheduler.performAsCurrent {
            Signal<Int>.startEagerly(on: scheduler) { $0.sendError(TestError(4)) }
        }
        scheduler.advance()
        let recorder = Recorder<Int>()
        _ = scheduler.performAsCurrent { signal.subscribe(recorder) }
        #expect(recorder.error as? TestError == TestError(4))
    }

    @Test func startLazilyRunsTheBlockOnFirstSubscription() {
        let scheduler = TestScheduler()
        let runs = Locked(0)
        let signal = Signal<Int>.startLazily(on: scheduler) { subscriber in
            runs.withLock { $0 += 1 }
            subscriber.sendNext(7)
            subscriber.sendCompleted()
        }
        scheduler.run()
        #expect(runs.withLock { $0 } == 0)
        let first = Recorder<Int>()
        _ = scheduler.performAsCurrent { signal.subscribe(first) }
        #expect(first.events.isEmpty)
        scheduler.advance()
        #expect(runs.withLock { $0 } == 1)
        #expect(first.values == [7] && first.isCompleted)
        let second = Recorder<Int>()
        _ = scheduler.performAsCurrent { signal.subscribe(second) }
        scheduler.run()
        #expect(runs.withLock { $0 } == 1)
        #expect(second.values == [7] && second.isCompleted)
    }

    @Test func disposingAStartLazilySubscriptionStopsItsDelivery() {
        let scheduler = TestScheduler()
        let signal = Signal<Int>.startLazily(on: scheduler) { subscriber in
            subscriber.sendNext(1)
        }
        let recorder = Recorder<Int>()
        let subscription = scheduler.performAsCurrent { signal.subscribe(recorder) }
        subscription.dispose()
        scheduler.run()
        #expect(recorder.events.isEmpty)
    }
}

@Suite struct IntervalTests {
    @Test func sendsTheSchedulersTimeAtEachTickAndNeverCompletes() {
        let scheduler = TestScheduler()
        let recorder = Recorder<SchedulerTime>()
        _ = scheduler.performAsCurrent {
            Signal.interval(.seconds(1), on: scheduler).subscribe(recorder)
        }
        scheduler.advance(by: .milliseconds(999))
        #expect(recorder.values.isEmpty)
        scheduler.advance(by: .milliseconds(2_500))
        #expect(recorder.values.map(\.nanoseconds) == [1_000_000_000, 2_000_000_000, 3_000_000_000])
        scheduler.advance(by: .seconds(100))
        #expect(recorder.values.count == 103)
        #expect(!recorder.isCompleted && recorder.error == nil)
    }

    @Test func disposingCancelsTheTimer() {
        let scheduler = TestScheduler()
        let recorder = Recorder<SchedulerTime>()
        let subscription = scheduler.performAsCurrent {
            Signal.interval(.seconds(1), on: scheduler, leeway: .milliseconds(10)).subscribe(recorder)
        }
        scheduler.advance(by: .seconds(2))
        subscription.dispose()
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(5))
        #expect(recorder.values.count == 2)
    }
}
