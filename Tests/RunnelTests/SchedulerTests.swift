import Dispatch
import Testing

@testable import Runnel

@Suite struct SchedulerTests {
    @Test func testSchedulerRunsInDueOrderThenFIFO() {
        let scheduler = TestScheduler()
        let order = Locked<[String]>([])
        scheduler.after(delay: .seconds(2)) { order.withLock { $0.append("b@2") } }
        scheduler.schedule { order.withLock { $0.append("a") } }
        scheduler.after(delay: .seconds(1)) { order.withLock { $0.append("c@1") } }
        scheduler.schedule { order.withLock { $0.append("d") } }
        scheduler.after(delay: .seconds(1)) { order.withLock { $0.append("e@1") } }
        #expect(order.withLock { $0 }.isEmpty)
        scheduler.run()
        #expect(order.withLock { $0 } == ["a", "d", "c@1", "e@1", "b@2"])
        #expect(scheduler.now == SchedulerTime(nanoseconds: 2_000_000_000))
    }

    @Test func testSchedulerAdvanceRunsOnlyWhatIsDue() {
        let scheduler = TestScheduler()
        let ran = Locked<[Int]>([])
        let seenNow = Locked<SchedulerTime?>(nil)
        scheduler.after(delay: .seconds(1)) {
            ran.withLock { $0.append(1) }
            seenNow.withLock { $0 = scheduler.now }
        }
        scheduler.after(delay: .seconds(3)) { ran.withLock { $0.append(3) } }
        scheduler.advance(by: .milliseconds(999))
        #expect(ran.withLock { $0 }.isEmpty)
        scheduler.advance(by: .milliseconds(1))
        #expect(ran.withLock { $0 } == [1])
        #expect(seenNow.withLock { $0 } == SchedulerTime(nanoseconds: 1_000_000_000))
        scheduler.advance(to: SchedulerTime(nanoseconds: 2_500_000_000))
        #expect(scheduler.now == SchedulerTime(nanoseconds: 2_500_000_000))
        #expect(ran.withLock { $0 } == [1])
        #expect(scheduler.pendingCount == 1)
        scheduler.advance(by: .seconds(1))
        #expect(ran.withLock { $0 } == [1, 3])
    }

    @Test func testSchedulerStepRunsOneBlock() {
        let scheduler = TestScheduler()
        let count = Locked(0)
        scheduler.after(delay: .seconds(5)) { count.withLock { $0 += 1 } }
        scheduler.after(delay: .seconds(6)) { count.withLock { $0 += 1 } }
        #expect(scheduler.step())
        #expect(count.withLock { $0 } == 1)
        #expect(scheduler.now == SchedulerTime(nanoseconds: 5_000_000_000))
        #expect(scheduler.step())
        #expect(!scheduler.step())
    }

    @Test func testSchedulerRepeatsUntilDisposed() {
        let scheduler = TestScheduler()
        let times = Locked<[Int64]>([])
        let repeating = scheduler.after(scheduler.now.advanced(by: .seconds(1)), repeatingEvery: .seconds(1)) {
            times.withLock { $0.append(scheduler.now.nanoseconds / 1_000_000_000) }
        }
        scheduler.advance(by: .milliseconds(3_500))
        #expect(times.withLock { $0 } == [1, 2, 3])
        repeating?.dispose()
        scheduler.advance(by: .seconds(10))
        #expect(times.withLock { $0 } == [1, 2, 3])
    }

    @Test func testSchedulerCancelledWorkNeverRuns() {
        let scheduler = TestScheduler()
        let ran = Locked(false)
        let work = scheduler.after(delay: .seconds(1)) { ran.withLock { $0 = true } }
        #expect(scheduler.pendingCount == 1)
        work?.dispose()
        #expect(scheduler.pendingCount == 0)
        scheduler.run()
        #expect(!ran.withLock { $0 })
    }

    @Test func testSchedulerIsCurrentWhileRunning() {
        let scheduler = TestScheduler()
        let current = Locked<(any Scheduler)?>(nil)
        scheduler.schedule { current.withLock { $0 = currentScheduler } }
        scheduler.run()
        #expect(current.withLock { $0 } === scheduler)
        #expect(currentScheduler == nil)
    }

    @Test func recursionIsUnrolledOnTheImmediateScheduler() {
        let count = Locked(0)
        ImmediateScheduler.shared.scheduleRecursive { reschedule in
            let again = count.withLock { count -> Bool in
                count += 1
                return count < 100_000
            }
            if again { reschedule() }
        }
        #expect(count.withLock { $0 } == 100_000)
    }

    @Test func recursionGoesThroughTheTestScheduler() {
        let scheduler = TestScheduler()
        let count = Locked(0)
        let other = Locked(false)
        scheduler.scheduleRecursive { reschedule in
            let again = count.withLock { count -> Bool in
                count += 1
                return count < 100_000
            }
            if again { reschedule() }
        }
        scheduler.schedule { other.withLock { $0 = true } }
        // One level per block, and other work interleaves.
        #expect(scheduler.step())
        #expect(count.withLock { $0 } == 1)
        #expect(scheduler.step())
        #expect(other.withLock { $0 })
        #expect(count.withLock { $0 } == 1)
        scheduler.run()
        #expect(count.withLock { $0 } == 100_000)
    }

    @Test func disposingRecursionStopsIt() {
        let scheduler = TestScheduler()
        let count = Locked(0)
        let recursion = scheduler.scheduleRecursive { reschedule in
            count.withLock { $0 += 1 }
            reschedule()
        }
        scheduler.step()
        scheduler.step()
        recursion.dispose()
        scheduler.run()
        #expect(count.withLock { $0 } == 2)
    }

    @Test func queueSchedulerIsFIFOAndCurrent() {
        let scheduler = QueueScheduler(name: "test.fifo")
        let order = Locked<[Int]>([])
        let wrongCurrent = Locked(0)
        let done = DispatchSemaphore(value: 0)
        for i in 0..<1_000 {
            scheduler.schedule {
                if currentScheduler !== scheduler { wrongCurrent.withLock { $0 += 1 } }
                order.withLock { $0.append(i) }
                if i == 999 { done.signal() }
            }
        }
        done.wait()
        #expect(order.withLock { $0 } == Array(0..<1_000))
        #expect(wrongCurrent.withLock { $0 } == 0)
    }

    @Test func queueSchedulerCancelledWorkDoesNotRun() {
        let scheduler = QueueScheduler(name: "test.cancel")
        let gate = DispatchSemaphore(value: 0)
        let ran = Locked(false)
        let done = DispatchSemaphore(value: 0)
        scheduler.schedule { gate.wait() }
        let work = scheduler.schedule { ran.withLock { $0 = true } }
        scheduler.schedule { done.signal() }
        work?.dispose()
        gate.signal()
        done.wait()
        #expect(!ran.withLock { $0 })
    }
}
