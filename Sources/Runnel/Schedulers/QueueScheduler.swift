import Dispatch

/// Runs work on a serial Dispatch queue, in FIFO order, one block at a time
/// (ReactiveCocoa's `RACTargetQueueScheduler`).
///
/// `currentScheduler` is this scheduler while its work runs. Cancelled work that has not
/// started never runs. Timers use the queue's monotonic clock.
public final class QueueScheduler: Scheduler {
    /// The queue the work runs on.
    public let queue: DispatchQueue

    /// A scheduler on a new serial queue named `name`.
    public init(name: String = "runnel.queue-scheduler", qos: DispatchQoS = .default) {
        queue = DispatchQueue(label: name, qos: qos)
    }

    /// A scheduler on an existing queue; it must be serial.
    public init(queue: DispatchQueue) { self.queue = queue }

    /// The scheduler that subscriptions made on a thread with no current scheduler run on
    /// (ReactiveCocoa's subscription scheduler's background scheduler).
    public static let background = QueueScheduler(name: "runnel.background")

    public var now: SchedulerTime { MonotonicClock.now }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable? {
        let disposable = Disposable()
        queue.async { [self] in
            guard !disposable.isDisposed else { return }
            performAsCurrent(action)
        }
        return disposable
    }

    @discardableResult
    public func after(_ time: SchedulerTime, _ action: @escaping @Sendable () -> Void) -> Disposable? {
        let disposable = Disposable()
        let delay = max(0, time.nanoseconds - now.nanoseconds)
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay))) { [self] in
            guard !disposable.isDisposed else { return }
            performAsCurrent(action)
        }
        return disposable
    }

    @discardableResult
    public func after(
        _ time: SchedulerTime, repeatingEvery interval: Duration, leeway: Duration,
        _ action: @escaping @Sendable () -> Void
    ) -> Disposable? {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let delay = max(0, time.nanoseconds - now.nanoseconds)
        timer.schedule(
            deadline: .now() + .nanoseconds(Int(clamping: delay)),
            repeating: .nanoseconds(Int(clamping: max(1, interval.nanoseconds))),
            leeway: .nanoseconds(Int(clamping: max(0, leeway.nanoseconds))))
        let cancel = TimerCancel(timer)
        let disposable = Disposable { cancel.timer.cancel() }
        timer.setEventHandler { [self] in
            guard !disposable.isDisposed else { return }
            performAsCurrent(action)
        }
        timer.resume()
        return disposable
    }
}

/// Lets a disposable cancel a Dispatch timer; `DispatchSourceTimer.cancel()` is thread-safe.
private final class TimerCancel: @unchecked Sendable {
    let timer: any DispatchSourceTimer
    init(_ timer: any DispatchSourceTimer) { self.timer = timer }
}
