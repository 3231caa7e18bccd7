/// Runs blocks of work (ReactiveCocoa's `RACScheduler`).
///
/// Every method may be called from any thread and returns a disposable that cancels the work
/// if it has not run yet (nil where there is nothing to cancel: work that already ran). A
/// scheduler runs one block at a time, and sets `currentScheduler` to itself while it does.
///
/// Work is `@Sendable`: it may run on another thread than the one that scheduled it.
public protocol Scheduler: AnyObject, Sendable {
    /// The scheduler's clock. `after` deadlines are instants on this clock.
    var now: SchedulerTime { get }

    /// Schedules `action` to run as soon as possible, after work already scheduled.
    @discardableResult
    func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable?

    /// Schedules `action` to run at `time` (at once if `time` has passed).
    @discardableResult
    func after(_ time: SchedulerTime, _ action: @escaping @Sendable () -> Void) -> Disposable?

    /// Schedules `action` at `time` and then every `interval`, until disposed. `leeway` is how
    /// late a run may be allowed to be, for schedulers that can coalesce timers.
    @discardableResult
    func after(
        _ time: SchedulerTime, repeatingEvery interval: Duration, leeway: Duration,
        _ action: @escaping @Sendable () -> Void
    ) -> Disposable?
}

extension Scheduler {
    /// Schedules `action` to run `delay` from now.
    @discardableResult
    public func after(delay: Duration, _ action: @escaping @Sendable () -> Void) -> Disposable? {
        after(now.advanced(by: delay), action)
    }

    /// Schedules `action` at `time` and then every `interval`, with no leeway.
    @discardableResult
    public func after(
        _ time: SchedulerTime, repeatingEvery interval: Duration, _ action: @escaping @Sendable () -> Void
    ) -> Disposable? {
        after(time, repeatingEvery: interval, leeway: .zero, action)
    }

    /// Schedules recursive work (ReactiveCocoa's `scheduleRecursiveBlock:`): `action` gets a
    /// `reschedule` function that schedules `action` again.
    ///
    /// Deep recursion is unrolled: a `reschedule` called while `action` is still running
    /// (as on an immediate scheduler) is remembered and run in a loop once `action` returns,
    /// so 100,000 levels take no stack. Disposing the result stops further runs.
    @discardableResult
    public func scheduleRecursive(
        _ action: @escaping @Sendable (_ reschedule: @escaping @Sendable () -> Void) -> Void
    ) -> Disposable {
        let disposable = CompoundDisposable()
        RecursiveWork(scheduler: self, action: action, disposable: disposable).scheduleNext()
        return disposable
    }

    /// Runs `body` now, on this thread, with `currentScheduler` set to this scheduler, and
    /// restores the previous current scheduler afterwards. Schedulers run their work through
    /// it; tests and benchmarks use it to subscribe inline.
    public func performAsCurrent<T>(_ body: () throws -> T) rethrows -> T {
        let previous = CurrentScheduler.storage.value
        let box = SchedulerBox(self)  // thread-local storage holds it unretained
        CurrentScheduler.storage.value = box
        defer {
            CurrentScheduler.storage.value = previous
            withExtendedLifetime(box) {}
        }
        return try body()
    }
}

/// The state of one `scheduleRecursive` call.
private final class RecursiveWork: @unchecked Sendable {
    let scheduler: any Scheduler
    let action: @Sendable (_ reschedule: @escaping @Sendable () -> Void) -> Void
    let disposable: CompoundDisposable
    /// Guarded by `lock`.
    private var running = false
    private var pending = 0
    private let lock = Lock()

    init(
        scheduler: any Scheduler, action: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        disposable: CompoundDisposable
    ) {
        self.scheduler = scheduler
        self.action = action
        self.disposable = disposable
    }

    func scheduleNext() {
        guard !disposable.isDisposed else { return }
        let holder = SerialDisposable()
        disposable.add(holder)
        let work = scheduler.schedule { [self] in
            disposable.remove(holder)
            runLoop()
        }
        holder.inner = work
    }

    /// Runs `action`, then once more for every `reschedule` it made while running, unless that
    /// `reschedule` came after it returned (then it was scheduled normally).
    private func runLoop() {
        lock.withLock { running = true }
        while !disposable.isDisposed {
            action { [self] in reschedule() }
            let again: Bool = lock.withLock {
                if pending > 0 {
                    pending -= 1
                    return true
                }
                running = false
                return false
            }
            if !again { return }
        }
        lock.withLock { running = false }
    }

    private func reschedule() {
        let inline: Bool = lock.withLock {
            if running {
                pending += 1
                return true
            }
            return false
        }
        if !inline { scheduleNext() }
    }
}
