import Dispatch
import RunnelTestSupport
import Testing

@testable import Runnel

@Suite struct OperatorTests {
    /// A signal that sends its subscription number, then completes or fails.
    func counting(fail: Bool, calls: Locked<Int>) -> Signal<Int> {
        Signal.create { subscriber in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            subscriber.sendNext(call)
            if fail { subscriber.sendError(TestError(call)) } else { subscriber.sendCompleted() }
            return nil
        }
    }

    @Test func repeatResubscribesUntilDisposed() {
        let calls = Locked(0)
        let seen = Locked<[Int]>([])
        let box = Locked<BlockSubscriber<Int>?>(nil)
        let subscriber = BlockSubscriber<Int>(next: { value in
            seen.withLock { $0.append(value) }
            if value == 5 { box.withLock { $0 }?.disposable.dispose() }
        })
        box.withLock { $0 = subscriber }
        inline { _ = counting(fail: false, calls: calls).repeat().subscribe(subscriber) }
        #expect(seen.withLock { $0 } == [1, 2, 3, 4, 5])
        #expect(calls.withLock { $0 } == 5)
        box.withLock { $0 = nil }
    }

    @Test func repeatPassesErrors() {
        let calls = Locked(0)
        let recorder = Recorder<Int>()
        inline { counting(fail: true, calls: calls).repeat().subscribe(recorder) }
        #expect(recorder.eventDescriptions == ["next(1)", "error(TestError(1))"])
    }

    @Test func retryCountLimitsResubscriptions() {
        let calls = Locked(0)
        let recorder = Recorder<Int>()
        inline { counting(fail: true, calls: calls).retry(2).subscribe(recorder) }
        #expect(recorder.eventDescriptions == ["next(1)", "next(2)", "next(3)", "error(TestError(3))"])
    }

    @Test func retryForeverUntilSuccess() {
        let calls = Locked(0)
        let source = Signal<Int>.create { subscriber in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            if call < 1_000 { subscriber.sendError(TestError(call)) } else { subscriber.sendCompleted() }
            return nil
        }
        let recorder = Recorder<Int>()
        inline { source.retry().subscribe(recorder) }
        #expect(recorder.eventDescriptions == ["completed"])
        #expect(calls.withLock { $0 } == 1_000)
    }

    @Test func sideEffectsRunBeforeForwarding() {
        let log = Locked<[String]>([])
        let signal = Signal.from([1, 2])
            .initially { log.withLock { $0.append("initially") } }
            .doNext { value in log.withLock { $0.append("doNext \(value)") } }
            .doCompleted { log.withLock { $0.append("doCompleted") } }
            .finally { log.withLock { $0.append("finally") } }
        inline {
            signal.subscribe(
                next: { value in log.withLock { $0.append("next \(value)") } },
                completed: { log.withLock { $0.append("completed") } })
        }
        #expect(
            log.withLock { $0 } == [
                "initially", "doNext 1", "next 1", "doNext 2", "next 2", "doCompleted", "finally", "completed",
            ])
    }

    @Test func doErrorAndFinallyOnError() {
        let log = Locked<[String]>([])
        let signal = Signal<Int>.error(TestError(5))
            .doError { error in log.withLock { $0.append("doError \(error)") } }
            .finally { log.withLock { $0.append("finally") } }
        let recorder = Recorder<Int>()
        inline { signal.subscribe(recorder) }
        #expect(log.withLock { $0 } == ["doError TestError(5)", "finally"])
        #expect(recorder.eventDescriptions == ["error(TestError(5))"])
    }

    @Test func logPassesEventsThrough() {
        let recorder = Recorder<Int>()
        inline { Signal.just(1).log().logNext().logError().logCompleted().subscribe(recorder) }
        #expect(recorder.eventDescriptions == ["next(1)", "completed"])
    }

    @Test func deliverOnSendsOnTheScheduler() {
        let scheduler = TestScheduler()
        let subject = Subject<Int>()
        let recorder = Recorder<Int>()
        let onScheduler = Locked(true)
        inline {
            subject.deliver(on: scheduler).subscribe(
                next: { value in
                    if currentScheduler !== scheduler { onScheduler.withLock { $0 = false } }
                    Signal.just(value).subscribe(recorder)
                })
        }
        subject.sendNext(1)
        subject.sendNext(2)
        #expect(recorder.values.isEmpty)
        scheduler.run()
        #expect(recorder.values == [1, 2])
        #expect(onScheduler.withLock { $0 })
    }

    @Test func deliverOnDropsEventsAfterDispose() {
        let scheduler = TestScheduler()
        let subject = Subject<Int>()
        let recorder = Recorder<Int>()
        let subscription = inline { subject.deliver(on: scheduler).subscribe(recorder) }
        subject.sendNext(1)
        subscription.dispose()
        scheduler.run()
        #expect(recorder.events.isEmpty)
    }

    @Test func subscribeOnRunsTheBodyOnTheScheduler() {
        let scheduler = TestScheduler()
        let ranOn = Locked<(any Scheduler)?>(nil)
        let source = Signal<Int>.create { subscriber in
            ranOn.withLock { $0 = currentScheduler }
            subscriber.sendNext(1)
            subscriber.sendCompleted()
            return nil
        }
        let recorder = Recorder<Int>()
        inline { source.subscribe(on: scheduler).subscribe(recorder) }
        #expect(recorder.events.isEmpty)
        scheduler.run()
        #expect(ranOn.withLock { $0 } === scheduler)
        #expect(recorder.eventDescriptions == ["next(1)", "completed"])
    }

    @Test func subscribeOnCancelledBeforeItRuns() {
        let scheduler = TestScheduler()
        let ran = Locked(false)
        let source = Signal<Int>.create { _ in
            ran.withLock { $0 = true }
            return nil
        }
        let subscription = inline { source.subscribe(on: scheduler).subscribe(next: { _ in }) }
        subscription.dispose()
        scheduler.run()
        #expect(!ran.withLock { $0 })
    }

    @Test func blockingOperators() throws {
        #expect(try Signal.from([4, 5]).first() == 4)
        #expect(throws: RunnelError.noValue) { try Signal<Int>.empty.first() }
        #expect(throws: TestError(6)) { try Signal<Int>.error(TestError(6)).first() }
        #expect(Signal<Int>.empty.first(default: 9) == 9)
        #expect(Signal<Int>.error(TestError()).first(default: 8) == 8)
        #expect(try Signal.from([1, 2, 3]).toArray() == [1, 2, 3])
        #expect(throws: TestError(7)) { try Signal<Int>.error(TestError(7)).toArray() }
        try Signal<Int>.empty.waitUntilCompleted()
        #expect(throws: TestError(2)) { try Signal<Int>.error(TestError(2)).waitUntilCompleted() }
    }

    @Test func firstWaitsForAnotherThread() throws {
        let subject = ReplaySubject<Int>()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { subject.sendNext(42) }
        #expect(try subject.first() == 42)
    }
}
