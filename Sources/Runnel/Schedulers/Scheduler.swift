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
    /// Each `reschedule` schedules `action` on this scheduler again, so on an asynchronous
    /// scheduler other work interleaves. On a scheduler that runs work synchronously (the
    /// immediate scheduler) deep recursion is unrolled: the nested run is deferred until
    /// `action` returns and then run in a loop, so 100,000 levels take no stack. Disposing
    /// the result stops further runs.
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
    @discardableResult
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
///
/// Every `reschedule` goes through the scheduler, so an asynchronous scheduler (a queue, the
/// test scheduler) runs one level per block and other work interleaves, as in ReactiveCocoa.
/// A scheduler that runs work synchronously inside `schedule` (the immediate scheduler) would
/// nest one stack frame per level: the block it runs finds `action` still on the stack, counts
/// itself as pending and returns, and the outer run loops instead (a trampoline).
private final class RecursiveWork: @unchecked Sendable {
    let scheduler: any Scheduler
    let action: @Sendable (_ reschedule: @escaping @Sendable () -> Void) -> Void
    let disposable: CompoundDisposable
    private let lock = Lock()
    /// Guarded by `lock`: whether `action` is on the stack, and how many runs were deferred
    /// to the loop of that outer run.
    private var running = false
    private var pending = 0

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
            run()
        }
        holder.inner = work
        // Work that already ran (synchronously) needs no holder.
        if work == nil { disposable.remove(holder) }
    }

    /// Runs `action`, and again for each run deferred while it was on the stack.
    private func run() {
        let nested: Bool = lock.withLock {
            if running {
                pending += 1
                return true
            }
            running = true
            return false
        }
        if nested { return }
        while !disposable.isDisposed {
            action { [self] in scheduleNext() }
            let again: Bool = lock.withLock {
                guard pending > 0 else { return false }
                pending -= 1
                return true
            }
            if !again { break }
        }
        lock.withLock {
            running = false
            pending = 0
        }
    }
}
