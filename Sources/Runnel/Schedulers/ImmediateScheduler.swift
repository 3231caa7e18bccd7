#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs work at once, on the calling thread (ReactiveCocoa's `RACImmediateScheduler`).
///
/// `after` blocks the calling thread until the deadline, then runs the work. Repeating work
/// cannot be done immediately; asking for it is a programming error, as in ReactiveCocoa.
/// Like ReactiveCocoa's, it does not set `currentScheduler`.
public final class ImmediateScheduler: Scheduler {
    /// The shared immediate scheduler.
    public static let shared = ImmediateScheduler()

    public init() {}

    public var now: SchedulerTime { MonotonicClock.now }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable? {
        action()
        return nil
    }

    @discardableResult
    public func after(_ time: SchedulerTime, _ action: @escaping @Sendable () -> Void) -> Disposable? {
        let wait = now.duration(to: time)
        if wait > .zero {
            var request = timespec(
                tv_sec: Int(wait.components.seconds), tv_nsec: Int(wait.components.attoseconds / 1_000_000_000))
            var remaining = timespec()
            while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
        }
        action()
        return nil
    }

    @discardableResult
    public func after(
        _ time: SchedulerTime, repeatingEvery interval: Duration, leeway: Duration,
        _ action: @escaping @Sendable () -> Void
    ) -> Disposable? {
        preconditionFailure("ImmediateScheduler does not support repeating work")
    }
}

/// The monotonic clock the real schedulers share.
enum MonotonicClock {
    static var now: SchedulerTime {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return SchedulerTime(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }
}
