/// A scheduler on a virtual clock, for testing time-based operators without sleeping
/// (ReactiveCocoa's `RACTestScheduler`, with a real clock of its own).
///
/// Work runs only when the test advances the clock: `advance(by:)`, `advance(to:)`, `run()`
/// or `step()`, on the calling thread, with `currentScheduler` set to this scheduler. Work
/// due at the same instant runs in the order it was scheduled; while it runs, `now` is its
/// due time. Thread-safe: work may be scheduled from any thread.
public final class TestScheduler: Scheduler {
    private struct State {
        var now: SchedulerTime
        var queue = DueQueue<Disposable>()
    }

    private let state: Locked<State>

    /// A test scheduler whose clock starts at `start`.
    public init(start: SchedulerTime = .zero) {
        state = Locked(State(now: start))
    }

    public var now: SchedulerTime { state.withLock { $0.now } }

    /// How many scheduled blocks are waiting (cancelled ones are not counted).
    public var pendingCount: Int { state.withLock { $0.queue.items.filter { !$0.handle.isDisposed }.count } }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable? {
        enqueue(at: nil, action)
    }

    @discardableResult
    public func after(_ time: SchedulerTime, _ action: @escaping @Sendable () -> Void) -> Disposable? {
        enqueue(at: time, action)
    }

    @discardableResult
    public func after(
        _ time: SchedulerTime, repeatingEvery interval: Duration, leeway: Duration,
        _ action: @escaping @Sendable () -> Void
    ) -> Disposable? {
        afterRearming(time, every: interval, action)
    }

    private func enqueue(at time: SchedulerTime?, _ action: @escaping @Sendable () -> Void) -> Disposable {
        state.withLock { state in
            let sequence = state.queue.upcomingSequence
            // Cancelling takes the block out at once, releasing what it captured (often the sink
            // that holds this scheduler: leaving it queued would keep that cycle alive).
            let disposable = Disposable { [weak self] in
                self?.state.withLock { state in state.queue.remove(sequence: sequence) }
            }
            state.queue.insert(at: max(time ?? state.now, state.now), handle: disposable, action)
            return disposable
        }
    }

    /// Runs the earliest block due at or before `limit`, moving the clock to its due time.
    /// Returns false when there is none.
    private func runNext(notAfter limit: SchedulerTime?) -> Bool {
        let next = state.withLock { state -> DueQueue<Disposable>.Item? in
            guard let first = state.queue.removeFirst(notAfter: limit) else { return nil }
            state.now = max(state.now, first.due)
            return first
        }
        guard let next else { return false }
        if !next.handle.isDisposed { performAsCurrent(next.action) }
        return true
    }

    /// Runs the earliest waiting block, whatever its due time. Returns false if none waits.
    @discardableResult
    public func step() -> Bool { runNext(notAfter: nil) }

    /// Runs everything due up to `now + duration`, then sets the clock there.
    public func advance(by duration: Duration = .zero) {
        advance(to: now.advanced(by: duration))
    }

    /// Runs everything due up to `time`, in order, then sets the clock to `time` (if later).
    public func advance(to time: SchedulerTime) {
        while runNext(notAfter: time) {}
        state.withLock { $0.now = max($0.now, time) }
    }

    /// Runs blocks until none is left, the clock jumping to each one's due time. Repeating
    /// work never lets it finish: dispose it first, or advance to a time.
    public func run() {
        while runNext(notAfter: nil) {}
    }
}
