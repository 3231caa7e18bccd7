import Glibc
import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelUV

extension RunnelUVTests {
    @Suite struct TurnLengthTests {
        @Test func quantilesComeFromTheBucketBounds() {
            var lengths = TurnLengths()
            #expect(lengths.quantileMicroseconds(0.99) == 0)
            for _ in 0..<98 { lengths.record(nanoseconds: 30_000) }
            lengths.record(nanoseconds: 700_000)
            lengths.record(nanoseconds: 3_000_000_000)
            #expect(lengths.turns == 100)
            #expect(lengths.quantileMicroseconds(0.5) == 50)
            #expect(lengths.quantileMicroseconds(0.99) == 1000)
            #expect(lengths.quantileMicroseconds(1) == 3_000_000)
            #expect(lengths.longestNanoseconds == 3_000_000_000)
            #expect(lengths.counts[0] == 98 && lengths.counts.last == 1)
            // A quantile is never reported longer than the longest turn.
            var short = TurnLengths()
            short.record(nanoseconds: 1_200_000)
            #expect(short.quantileMicroseconds(0.99) == 1200)
        }

        /// A block that keeps the loop busy for 20 ms makes a turn at least that long, whether
        /// the loop woke for it through its queue or for a timer; waiting idle does not count.
        ///
        /// A turn is recorded when the loop is about to wait again, and the loop's queue runs
        /// blocks queued while it drains in the same turn, so the figures are read again, with
        /// pauses in which the loop waits, until the turn is in them.
        @Test func aBusyTurnIsMeasuredAndIdleTimeIsNot() {
            let loop = EventLoop.started()
            defer { loop.shutdown() }
            _ = onLoop(loop) { 0 }
            usleep(50_000)  // the loop idles meanwhile
            let idle = onLoop(loop) { loop.scheduler.turnLengths }
            #expect(idle.longestNanoseconds < 20_000_000, "idle time counted: \(idle.longestNanoseconds) ns")

            _ = onLoop(loop) { spin(milliseconds: 20) }
            let queued = eventually { () -> TurnLengths? in
                let lengths = onLoop(loop) { loop.scheduler.turnLengths }
                return lengths.longestNanoseconds >= 20_000_000 ? lengths : nil
            }
            #expect(queued != nil, "the busy turn was not measured")
            #expect((queued?.quantileMicroseconds(1) ?? 0) >= 20_000)

            let fired = Waiter()
            _ = onLoop(loop) {
                loop.scheduler.after(loop.scheduler.now.advanced(by: .milliseconds(5))) {
                    spin(milliseconds: 30)
                    fired.signal()
                }
            }
            #expect(fired.wait())
            #expect(
                eventually { onLoop(loop) { loop.scheduler.turnLengths.longestNanoseconds >= 30_000_000 } },
                "the timer's busy turn was not measured")
        }

        /// A callback sees one count however long it runs and whatever it queues; each job of
        /// the queue and each timer's action is a callback of its own (what a publish clock
        /// read once per callback relies on).
        @Test func eachCallbackHasACountOfItsOwn() {
            let loop = EventLoop.started()
            defer { loop.shutdown() }
            let scheduler = loop.scheduler
            let within = onLoop(loop) { () -> [UInt64] in
                let first = scheduler.callbackCount
                scheduler.schedule {}
                spin(milliseconds: 2)
                return [first, scheduler.callbackCount]
            }
            #expect(within[0] == within[1])
            let next = onLoop(loop) { scheduler.callbackCount }
            #expect(next > within[1])

            let timed = Shared<[UInt64]>([])
            let fired = Waiter()
            _ = onLoop(loop) {
                let armed = scheduler.callbackCount
                _ = scheduler.after(scheduler.now.advanced(by: .milliseconds(1))) {
                    timed.withLock { $0 = [armed, scheduler.callbackCount] }
                    fired.signal()
                }
                return armed
            }
            #expect(fired.wait())
            let counts = timed.current
            #expect(counts.count == 2 && counts[1] > counts[0])
        }
    }
}

/// Keeps the calling thread busy for `milliseconds`.
@discardableResult
private func spin(milliseconds: Int) -> Int {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    let until = Int(spec.tv_sec) * 1_000_000_000 + spec.tv_nsec + milliseconds * 1_000_000
    var rounds = 0
    repeat {
        clock_gettime(CLOCK_MONOTONIC, &spec)
        rounds += 1
    } while Int(spec.tv_sec) * 1_000_000_000 + spec.tv_nsec < until
    return rounds
}
