/// A point on a scheduler's clock, in nanoseconds since that scheduler's own epoch.
///
/// Each scheduler has its own clock (`Scheduler.now`): a monotonic clock for the real
/// schedulers, a virtual one for `TestScheduler`. Compare instants only from one scheduler.
public struct SchedulerTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static let zero = SchedulerTime(nanoseconds: 0)

    public static func < (lhs: SchedulerTime, rhs: SchedulerTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// This instant moved by `duration` (saturating, so huge durations do not trap).
    public func advanced(by duration: Duration) -> SchedulerTime {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(duration.nanoseconds)
        if overflow { return SchedulerTime(nanoseconds: duration < .zero ? .min : .max) }
        return SchedulerTime(nanoseconds: sum)
    }

    /// The duration from this instant to `other`.
    public func duration(to other: SchedulerTime) -> Duration {
        .nanoseconds(other.nanoseconds &- nanoseconds)
    }

    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating at `Int64`'s bounds.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }

    /// The duration in seconds as a `Double`.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
