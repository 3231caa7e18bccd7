import Glibc

/// Time from `CLOCK_MONOTONIC`, for deadlines and round-trip times. Stateless: any thread.
package enum MonotonicClock {
    package static var nanoseconds: Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    package static var milliseconds: Int64 { nanoseconds / 1_000_000 }
}
