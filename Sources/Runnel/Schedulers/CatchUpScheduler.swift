/// A scheduler that first replays the past on a virtual clock, then carries on live: while it
/// catches up, time is what the caller says it is (`advance(to:)`, moved by the times of the
/// values being replayed), and work runs when that time reaches it; `goLive()` then runs what
/// falls due up to the live scheduler's now and hands everything still waiting to the live
/// scheduler, at the same instants. So time operators (`throttle`, `bufferWithTime`, `delay`,
/// `timeout`, `interval`) given this scheduler produce, over a replay of values with their
/// times, what they would have produced had they seen those values live, and go on without a
/// gap or a window counted twice.
///
/// The virtual clock is on the live scheduler's scale: the caller maps its values' times onto
/// it. Thread rules: like `TestScheduler`, its state is behind a lock; while catching up, work
/// runs on the thread that advances it, with `currentScheduler` set to this scheduler. Lifetime
/// rule: holds the live scheduler; waiting work holds what it captured until it runs, is
/// disposed, or is handed over.
public final class CatchUpScheduler: Scheduler {
    private struct State {
        var now: SchedulerTime
        var isLive = false
        /// Each item's handle is what `after` returned: disposing it cancels the work, here or
        /// once handed over.
        var queue = DueQueue<SerialDisposable>()
    }

    private let live: any Scheduler
    private let state: Locked<State>

    /// Catching up from `start`, a time on `live`'s clock.
    public init(live: any Scheduler, start: SchedulerTime) {
        self.live = live
        state = Locked(State(now: start))
    }

    /// Whether it has handed over to the live scheduler.
    public var isLive: Bool { state.withLock { $0.isLive } }

    public var now: SchedulerTime {
        state.withLock { $0.isLive ? nil : $0.now } ?? live.now
    }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable? {
        enqueue(at: nil, action)
    }

    @discardableResult
    public func after(_ time: SchedulerTime, _ action: @escaping @Sendable () -> Void) -> Disposable? {
        enqueue(at: time, action)
    }

    /// Each run is scheduled through `after`, so a repetition that starts while catching up
    /// moves to the live scheduler with the rest.
    @discardableResult
    public func after(
        _ time: SchedulerTime, repeatingEvery interval: Duration, leeway: Duration,
        _ action: @escaping @Sendable () -> Void
    ) -> Disposable? {
        afterRearming(time, every: interval, action)
    }

    private func enqueue(at time: SchedulerTime?, _ action: @escaping @Sendable () -> Void) -> Disposable? {
        let handle = SerialDisposable()
        let queued = state.withLock { state -> UInt64? in
            guard !state.isLive else { return nil }
            let sequence = state.queue.upcomingSequence
            state.queue.insert(at: max(time ?? state.now, state.now), handle: handle, action)
            return sequence
        }
        guard let sequence = queued else { return time.map { live.after($0, action) } ?? live.schedule(action) }
        // Cancelling takes the work out at once, releasing what it captured.
        handle.inner = Disposable { [weak self] in
            self?.state.withLock { state in state.queue.remove(sequence: sequence) }
        }
        return handle
    }

    /// Runs, in order, the work due up to `time` while catching up, then sets the clock there
    /// (if later). Nothing once live.
    public func advance(to time: SchedulerTime) {
        while let next = takeNext(notAfter: time) {
            if !next.handle.isDisposed { performAsCurrent(next.action) }
        }
        state.withLock { state in
            if !state.isLive { state.now = max(state.now, time) }
        }
    }

    /// Catches up to the live scheduler's now, then hands it what still waits, due when it was.
    public func goLive() {
        advance(to: live.now)
        let waiting = state.withLock { state -> [DueQueue<SerialDisposable>.Item] in
            guard !state.isLive else { return [] }
            state.isLive = true
            return state.queue.removeAll()
        }
        for item in waiting where !item.handle.isDisposed {
            // The queue's own cancelling is moot now: the live scheduler's takes its place.
            item.handle.inner = live.after(item.due, item.action)
        }
    }

    private func takeNext(notAfter limit: SchedulerTime) -> DueQueue<SerialDisposable>.Item? {
        state.withLock { state in
            guard !state.isLive, let first = state.queue.removeFirst(notAfter: limit) else { return nil }
            state.now = max(state.now, first.due)
            return first
        }
    }
}
