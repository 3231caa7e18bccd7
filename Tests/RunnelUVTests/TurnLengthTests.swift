import Glibc
import Runnel
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

        /// A block that keeps the loop busy for 20 ms makes a turn at least that long; the
        /// loop's idle waits do not count.
        @Test func aBusyTurnIsMeasuredAndIdleTimeIsNot() {
            let loop = EventLoop.started()
            defer { loop.shutdown() }
            _ = onLoop(loop) { 0 }
            usleep(50_000)  // the loop idles meanwhile
            let idle = onLoop(loop) { loop.scheduler.turnLengths }
            #expect(idle.longestNanoseconds < 20_000_000, "idle time counted: \(idle.longestNanoseconds) ns")
            _ = onLoop(loop) {
                var spin = timespec()
                clock_gettime(CLOCK_MONOTONIC, &spin)
                let until = Double(spin.tv_sec) + Double(spin.tv_nsec) / 1e9 + 0.02
                while Double(spin.tv_sec) + Double(spin.tv_nsec) / 1e9 < until { clock_gettime(CLOCK_MONOTONIC, &spin) }
                return 0
            }
            _ = onLoop(loop) { 0 }
            let busy = onLoop(loop) { loop.scheduler.turnLengths }
            #expect(busy.longestNanoseconds >= 20_000_000)
            #expect(busy.quantileMicroseconds(1) >= 20_000)
        }
    }
}
