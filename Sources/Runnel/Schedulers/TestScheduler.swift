/// A scheduler on a virtual clock, for testing time-based operators without sleeping
/// (ReactiveCocoa's `RACTestScheduler`, with a real clock of its own).
///
/// Work runs only when the test advances the clock: `advance(by:)`, `advance(to:)`, `run()`
/// or `step()`, on the calling thread, with `currentScheduler` set to this scheduler. Work
/// due at the same instant runs in the order it was scheduled; while it runs, `now` is its
/// due time. Thread-safe: work may be scheduled from any thread.
public final class TestScheduler: Scheduler {
    private struct Item {
        let due: SchedulerTime
        let sequence: UInt64
        let disposable: Disposable
        let action: @Sendable () -> Void
    }

    private struct State {
        var now: SchedulerTime
        var nextSequence: UInt64 = 0
        /// Sorted by (due, sequence).
        var items: [Item] = []
    }

    private let state: Locked<State>

    /// A test scheduler whose clock starts at `start`.
    public init(start: SchedulerTime = .zero) {
        state = Locked(State(now: start))
    }

    public var now: SchedulerTime { state.withLock { $0.now } }

    /// How many scheduled blocks are waiting (cancelled ones are not counted).
    public var pendingCount: Int { state.withLock { $0.items.filter { !$0.disposable.isDisposed }.count } }

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
        let serial = SerialDisposable()
        let step = max(interval, .nanoseconds(1))
        @Sendable func arm(_ due: SchedulerTime) {
            serial.inner = enqueue(at: due) {
                action()
                arm(due.advanced(by: step))
            }
        }
        arm(time)
        return serial
    }

    private func enqueue(at time: SchedulerTime?, _ action: @escaping @Sendable () -> Void) -> Disposable {
        let sequence = state.withLock { state -> UInt64 in
            defer { state.nextSequence += 1 }
            return state.nextSequence
        }
        // Cancelling takes the block out at once, releasing what it captured (often the sink
        // that holds this scheduler: leaving it queued would keep that cycle alive).
        let disposable = Disposable { [weak self] in
            self?.state.withLock { state in state.items.removeAll { $0.sequence == sequence } }
        }
        state.withLock { state in
            let due = max(time ?? state.now, state.now)
            let item = Item(due: due, sequence: sequence, disposable: disposable, action: action)
            // Insert after every item due at or before `due`: FIFO among equal deadlines.
            var low = 0
            var high = state.items.count
            while low < high {
                let mid = (low + high) / 2
                if state.items[mid].due <= due { low = mid + 1 } else { high = mid }
            }
            state.items.insert(item, at: low)
        }
        return disposable
    }

    /// Runs the earliest block due at or before `limit`, moving the clock to its due time.
    /// Returns false when there is none.
    private func runNext(notAfter limit: SchedulerTime?) -> Bool {
        let next: Item? = state.withLock { state in
            while let first = state.items.first, first.disposable.isDisposed { state.items.removeFirst() }
            guard let first = state.items.first else { return nil }
            if let limit, first.due > limit { return nil }
            state.items.removeFirst()
            state.now = max(state.now, first.due)
            return first
        }
        guard let next else { return false }
        if !next.disposable.isDisposed { performAsCurrent(next.action) }
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
