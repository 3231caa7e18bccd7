import Dispatch
import Runnel
import RunnelTestSupport
import RunnelUV
import Testing

extension RunnelUVTests {
    @Suite struct LoopSchedulerTests {
        @Test func blocksFromFourThreadsRunOnceEachInPerThreadOrder() {
            let loop = EventLoop.started()
            let threads = 4
            let perThread = 100_000
            // Touched only on the loop thread; the final block hands it to the test.
            final class Seen: @unchecked Sendable {
                var next = [Int](repeating: 0, count: 4)
                var outOfOrder = 0
                var ran = 0
                var offLoop = 0
            }
            let seen = Seen()
            let scheduler = loop.scheduler
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for index in 0..<perThread {
                    scheduler.schedule {
                        if seen.next[thread] != index { seen.outOfOrder += 1 }
                        seen.next[thread] = index + 1
                        seen.ran += 1
                        if currentScheduler !== scheduler || !scheduler.isOnLoopThread { seen.offLoop += 1 }
                    }
                }
            }
            let done = Waiter()
            scheduler.schedule { done.signal() }
            #expect(done.wait(seconds: 60))
            let result = onLoop(loop) { (seen.ran, seen.outOfOrder, seen.next, seen.offLoop) }
            #expect(result.0 == threads * perThread)
            #expect(result.1 == 0)
            #expect(result.2 == [Int](repeating: perThread, count: threads))
            #expect(result.3 == 0)
            #expect(loop.shutdown() == 0)
        }

        @Test func workFromTheLoopThreadQueuesBehindEarlierWork() {
            let loop = EventLoop.started()
            let order = Shared<[String]>([])
            let done = Waiter()
            let scheduler = loop.scheduler
            scheduler.schedule {
                order.withLock { $0.append("first") }
                // Scheduled from the loop thread: runs after "second", which was queued earlier.
                scheduler.schedule {
                    order.withLock { $0.append("third") }
                    done.signal()
                }
            }
            scheduler.schedule { order.withLock { $0.append("second") } }
            #expect(done.wait())
            #expect(order.current == ["first", "second", "third"])
            #expect(loop.shutdown() == 0)
        }

        @Test func cancelledWorkDoesNotRun() {
            let loop = EventLoop()  // not running yet, so nothing runs before the cancel
            let ran = Shared(0)
            let disposable = loop.scheduler.schedule { ran.withLock { $0 += 1 } }
            loop.scheduler.schedule { ran.withLock { $0 += 10 } }
            disposable?.dispose()
            loop.start()
            let done = Waiter()
            loop.scheduler.schedule { done.signal() }
            #expect(done.wait())
            #expect(ran.current == 10)
            #expect(loop.shutdown() == 0)
        }

        @Test func timersFireInDeadlineOrderAndACancelledOneNever() {
            let loop = EventLoop.started()
            let scheduler = loop.scheduler
            let fired = Shared<[Int]>([])
            let early = Shared(0)
            let start = scheduler.now
            var disposables: [Int: Disposable] = [:]
            for delay in [50, 10, 40, 20, 30, 60] {
                let deadline = start.advanced(by: .milliseconds(delay))
                disposables[delay] = scheduler.after(deadline) {
                    if scheduler.now < deadline { early.withLock { $0 += 1 } }
                    fired.withLock { $0.append(delay) }
                }
            }
            disposables[30]?.dispose()  // from this thread, racing the loop
            #expect(eventually { fired.current.count == 5 })
            #expect(eventually { scheduler.armedTimerCount == 0 })
            // Give the cancelled one every chance to misfire.
            let waited = Waiter()
            scheduler.after(delay: .milliseconds(50)) { waited.signal() }
            #expect(waited.wait())
            #expect(fired.current == [10, 20, 40, 50, 60])
            #expect(early.current == 0)
            #expect(loop.shutdown() == 0)
        }

        @Test func armedTimerCountFollowsArmingAndCancelling() {
            let loop = EventLoop.started()
            let scheduler = loop.scheduler
            let long = scheduler.after(delay: .seconds(60)) {}
            let repeating = scheduler.after(scheduler.now.advanced(by: .seconds(60)), repeatingEvery: .seconds(1)) {}
            #expect(eventually { scheduler.armedTimerCount == 2 })
            long?.dispose()
            #expect(eventually { scheduler.armedTimerCount == 1 })
            repeating?.dispose()
            #expect(eventually { scheduler.armedTimerCount == 0 })
            #expect(loop.shutdown() == 0)
        }

        @Test func repeatingTimerCanBeDisposedFromItsOwnBlock() {
            let loop = EventLoop.started()
            let scheduler = loop.scheduler
            let runs = Shared(0)
            let holder = SerialDisposable()
            holder.inner = scheduler.after(scheduler.now, repeatingEvery: .milliseconds(2)) {
                let count = runs.withLock { value -> Int in
                    value += 1
                    return value
                }
                if count == 3 { holder.dispose() }
            }
            #expect(eventually { runs.current >= 3 })
            #expect(eventually { scheduler.armedTimerCount == 0 })
            let waited = Waiter()
            scheduler.after(delay: .milliseconds(30)) { waited.signal() }
            #expect(waited.wait())
            #expect(runs.current == 3)
            #expect(loop.shutdown() == 0)
        }

        @Test func timerBlocksSeeTheLoopAsCurrentScheduler() {
            let loop = EventLoop.started()
            let scheduler = loop.scheduler
            let sawIt = Shared(false)
            let done = Waiter()
            scheduler.after(delay: .milliseconds(1)) {
                sawIt.withLock { $0 = currentScheduler === scheduler }
                done.signal()
            }
            #expect(done.wait())
            #expect(sawIt.current)
            #expect(loop.shutdown() == 0)
        }

        @Test func recursiveWorkRunsToTheEnd() {
            let loop = EventLoop.started()
            let count = Shared(0)
            let done = Waiter()
            loop.scheduler.scheduleRecursive { reschedule in
                let value = count.withLock { value -> Int in
                    value += 1
                    return value
                }
                if value < 10_000 { reschedule() } else { done.signal() }
            }
            #expect(done.wait())
            #expect(count.current == 10_000)
            #expect(loop.shutdown() == 0)
        }

        @Test func intervalSourceTicksOnTheLoop() {
            let loop = EventLoop.started()
            let scheduler = loop.scheduler
            // A small interval source on any scheduler, as `Signal.interval(_:on:)` would be.
            func interval(_ period: Duration, on scheduler: any Scheduler) -> Signal<SchedulerTime> {
                Signal.create { subscriber in
                    scheduler.after(scheduler.now.advanced(by: period), repeatingEvery: period) {
                        subscriber.sendNext(scheduler.now)
                    }
                }
            }
            let ticks = Shared<[SchedulerTime]>([])
            let start = scheduler.now
            let subscription = interval(.milliseconds(5), on: scheduler).subscribeNext { time in
                ticks.withLock { $0.append(time) }
            }
            #expect(eventually { ticks.current.count >= 5 })
            subscription.dispose()
            #expect(eventually { scheduler.armedTimerCount == 0 })
            let times = ticks.current
            #expect(times[0] >= start.advanced(by: .milliseconds(5)))
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
            #expect(loop.shutdown() == 0)
        }
    }
}
