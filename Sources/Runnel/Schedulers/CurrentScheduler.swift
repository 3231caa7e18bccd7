/// The scheduler running the current thread's work, if any (ReactiveCocoa's
/// `+[RACScheduler currentScheduler]`). Set by schedulers while they run a block.
public var currentScheduler: (any Scheduler)? { CurrentScheduler.storage.value?.scheduler }

/// Holds `currentScheduler` per thread.
enum CurrentScheduler {
    static let storage = ThreadLocalReference<SchedulerBox>()
}

/// Boxes an existential scheduler so thread-local storage can hold it.
final class SchedulerBox {
    let scheduler: any Scheduler
    init(_ scheduler: any Scheduler) { self.scheduler = scheduler }
}
