import RunnelTestSupport
import Testing

@testable import Runnel

/// Time-operator scenarios written against any scheduler plus a way to let its time pass, so
/// the same cases run on the virtual `TestScheduler` here and on a real event loop elsewhere.
/// Each subscribes on the scheduler's thread via `perform`, and returns what it observed.
struct TimeScenarios {
    /// Runs a block with the scheduler current (for a real loop: on its thread, waiting).
    let perform: (@escaping @Sendable () -> Void) -> Void
    /// Lets `interval` of the scheduler's time pass, running what falls due.
    let advance: (Duration) -> Void
    let scheduler: any Scheduler

    /// throttle drops the held value when a value failing the test arrives, and sends that
    /// one at once (RAC: "should not send a buffered value if an unthrottled value arrives").
    func throttleDropsHeldValueForUnthrottled() -> [String] {
        let scheduler = self.scheduler
        let subject = Subject<Int>()
        let recorder = Recorder<Int>()
        perform {
            subject.throttle(.seconds(1), on: scheduler, valuesPassing: { $0 % 2 == 0 }).subscribe(recorder)
            subject.sendNext(2)
            subject.sendNext(3)
        }
        advance(.seconds(2))
        perform {
            subject.sendNext(4)
            subject.sendNext(6)
        }
        advance(.seconds(2))
        perform {
            subject.sendNext(8)
            subject.sendCompleted()
        }
        return recorder.eventDescriptions
    }

    /// delay shifts values and completion but sends errors at once, cancelling the rest.
    func delayDoesNotDelayErrors() -> (beforeDeadline: [String], after: [String]) {
        let scheduler = self.scheduler
        let subject = Subject<Int>()
        let recorder = Recorder<Int>()
        perform {
            subject.delay(.seconds(1), on: scheduler).subscribe(recorder)
            subject.sendNext(1)
            subject.sendError(TestError(9))
        }
        let before = recorder.eventDescriptions
        advance(.seconds(2))
        return (before, recorder.eventDescriptions)
    }

    /// delay sends nothing once disposed.
    func delayCancelsOnDispose() -> [String] {
        let scheduler = self.scheduler
        let subject = Subject<Int>()
        let recorder = Recorder<Int>()
        let subscription = Locked<Disposable?>(nil)
        perform {
            subscription.withLock { $0 = subject.delay(.seconds(1), on: scheduler).subscribe(recorder) }
            subject.sendNext(1)
        }
        advance(.seconds(2))
        perform {
            subject.sendNext(2)
            subject.sendCompleted()
            subscription.withLock { $0 }?.dispose()
        }
        advance(.seconds(2))
        return recorder.eventDescriptions
    }

    /// timeout never fires after the subscription is disposed.
    func timeoutDoesNotFireAfterDispose() -> [String] {
        let scheduler = self.scheduler
        let recorder = Recorder<Int>()
        let subscription = Locked<Disposable?>(nil)
        perform {
            subscription.withLock { $0 = Signal<Int>.never.timeout(.seconds(1), on: scheduler).subscribe(recorder) }
        }
        advance(.milliseconds(500))
        subscription.withLock { $0 }?.dispose()
        advance(.seconds(2))
        return recorder.eventDescriptions
    }

    /// timeout fails a source that does not terminate in time.
    func timeoutFires() -> [String] {
        let scheduler = self.scheduler
        let subject = Subject<Int>()
        let recorder = Recorder<Int>()
        perform {
            subject.timeout(.seconds(1), on: scheduler).subscribe(recorder)
            subject.sendNext(1)
        }
        advance(.seconds(2))
        perform { subject.sendNext(2) }
        return recorder.eventDescriptions
    }

    /// bufferWithTime sends a window per interval and flushes the open one on completion.
    func bufferFlushesOnCompletion() -> [[Int]] {
        let scheduler = self.scheduler
        let subject = Subject<Int>()
        let recorder = Recorder<[Int]>()
        perform {
            subject.buffer(withTime: .seconds(1), on: scheduler).subscribe(recorder)
            subject.sendNext(1)
            subject.sendNext(2)
        }
        advance(.seconds(2))
        perform {
            subject.sendNext(3)
            subject.sendNext(4)
            subject.sendCompleted()
        }
        return recorder.values
    }
}

@Suite struct TimeOperatorTests {
    let scheduler = TestScheduler()

    var scenarios: TimeScenarios {
        let scheduler = self.scheduler
        return TimeScenarios(
            perform: { body in scheduler.performAsCurrent(body) }, advance: { scheduler.advance(by: $0) },
            scheduler: scheduler)
    }

    @Test func throttleDropsHeldValueForUnthrottled() {
        #expect(scenarios.throttleDropsHeldValueForUnthrottled() == ["next(3)", "next(6)", "next(8)", "completed"])
    }

    @Test func throttleSendsOnlyAfterQuietInterval() {
        let subject = Subject<Int>()
        let recorder = Recorder<Int>()
        onTestScheduler(scheduler) { subject.throttle(.seconds(1), on: scheduler).subscribe(recorder) }
        subject.sendNext(1)
        scheduler.advance(by: .milliseconds(500))
        subject.sendNext(2)
        scheduler.advance(by: .milliseconds(999))
        #expect(recorder.values.isEmpty)
        scheduler.advance(by: .milliseconds(1))
        #expect(recorder.values == [2])
        subject.sendNext(3)
        subject.sendError(TestError())
        scheduler.run()
        #expect(recorder.eventDescriptions == ["next(2)", "error(TestError(1))"])
    }

    @Test func delayDoesNotDelayErrors() {
        let result = scenarios.delayDoesNotDelayErrors()
        #expect(result.beforeDeadline == ["error(TestError(9))"])
        #expect(result.after == ["error(TestError(9))"])
        #expect(scheduler.pendingCount == 0)
    }

    @Test func delayShiftsValuesAndCompletion() {
        let subject = Subject<Int>()
        let recorder = Recorder<Int>()
        onTestScheduler(scheduler) { subject.delay(.seconds(1), on: scheduler).subscribe(recorder) }
        subject.sendNext(1)
        scheduler.advance(by: .milliseconds(500))
        subject.sendNext(2)
        subject.sendCompleted()
        scheduler.advance(by: .milliseconds(500))
        #expect(recorder.eventDescriptions == ["next(1)"])
        scheduler.advance(by: .milliseconds(500))
        #expect(recorder.eventDescriptions == ["next(1)", "next(2)", "completed"])
    }

    @Test func delayCancelsOnDispose() {
        #expect(scenarios.delayCancelsOnDispose() == ["next(1)"])
        #expect(scheduler.pendingCount == 0)
    }

    @Test func timeoutDoesNotFireAfterDispose() {
        #expect(scenarios.timeoutDoesNotFireAfterDispose().isEmpty)
    }

    @Test func timeoutFires() {
        #expect(scenarios.timeoutFires() == ["next(1)", "error(timed out)"])
    }

    @Test func timeoutPassesEarlyCompletion() {
        let recorder = Recorder<Int>()
        onTestScheduler(scheduler) { Signal.just(5).timeout(.seconds(1), on: scheduler).subscribe(recorder) }
        scheduler.advance(by: .seconds(5))
        #expect(recorder.eventDescriptions == ["next(5)", "completed"])
        #expect(scheduler.pendingCount == 0)
    }

    @Test func bufferFlushesOnCompletion() {
        #expect(scenarios.bufferFlushesOnCompletion() == [[1, 2], [3, 4]])
    }

    @Test func bufferSendsNoEmptyWindowAndDropsOnError() {
        let subject = Subject<Int>()
        let recorder = Recorder<[Int]>()
        onTestScheduler(scheduler) { subject.buffer(withTime: .seconds(1), on: scheduler).subscribe(recorder) }
        scheduler.advance(by: .seconds(3))
        #expect(recorder.events.isEmpty)
        subject.sendNext(1)
        scheduler.advance(by: .milliseconds(500))
        subject.sendError(TestError())
        scheduler.run()
        #expect(recorder.eventDescriptions == ["error(TestError(1))"])
    }
}
