import CLibUV
import Runnel
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A `Scheduler` running work on one libuv loop.
///
/// Thread rules: `schedule`, `after` and every disposable they return may be used from any
/// thread. Work runs on the loop thread, one block at a time, with `currentScheduler` set to
/// this scheduler (set once while the loop runs, so every libuv callback sees it too).
/// `schedule` puts work on one lock-protected FIFO queue, whichever thread calls it (the loop's
/// own thread included), and wakes the loop with an `uv_async_t`: blocks scheduled by one
/// thread run in the order it scheduled them, and never interleave out of order with blocks
/// from the loop thread. Timers are `uv_timer_t` handles (see `LoopTimer`). Entry points meant
/// for the loop thread only call `assertOnLoopThread()`, checked in debug builds.
///
/// Besides the queue it owns the loop's two other pieces of state: `handles`, the open handle
/// owners that shutdown closes, and `io`, what the loop's connections share (read buffer,
/// write chunks, the flush once per turn).
///
/// Lifetime rule: the `uv_loop_t` and the wake-up `uv_async_t` are allocated here, the check
/// handle by `io`. The handles are closed when the loop shuts down (their memory is freed in
/// their close callbacks); the loop memory is freed in `deinit`, after `uv_loop_close`.
/// Handle owners (timers, connections, ...) hold this scheduler strongly, so it outlives them.
public final class LoopScheduler: Scheduler, @unchecked Sendable {
    /// One block on the queue; `cancel` is checked just before it runs.
    struct WorkItem {
        let action: @Sendable () -> Void
        let cancel: Disposable?
    }

    let uvLoop: UnsafeMutablePointer<uv_loop_t>
    private let wakeup: UnsafeMutablePointer<uv_async_t>
    /// The loop's open handle owners and their counts.
    let handles = LoopHandles()
    /// What the loop's connections share.
    let io: LoopIO

    // Guarded by `queueLock`.
    private let queueLock = Lock()
    private var queue: [WorkItem] = []
    private var queueClosed = false
    /// An `uv_async_send` has been made and the drain has not yet found the queue empty.
    private var wakeupPending = false

    /// The id of the thread running the loop, or 0 while none does.
    private let loopThread = Atomic<UInt>(0)

    // Loop-thread state.
    /// The spare array the drain swaps with `queue`, so draining does not allocate.
    private var draining: [WorkItem] = []
    /// Set once shutdown has begun: no new handle is opened after it.
    private(set) var isShuttingDown = false
    private var ownHandlesClosed = false
    /// Set once `uv_loop_close` has returned 0 (then the loop memory may be freed).
    private var loopClosed = false
    /// `uv_loop_close`'s result, once the loop has finished.
    private let closeStatus = Locked<Int32?>(nil)

    init() {
        // A write to a socket the peer has closed must fail with EPIPE, not kill the process.
        _ = ignoreBrokenPipe
        uvLoop = .allocate(capacity: 1)
        let status = uv_loop_init(uvLoop)
        precondition(status == 0, "uv_loop_init failed: \(UVError(code: status, operation: "uv_loop_init"))")
        io = LoopIO(loop: uvLoop)
        wakeup = .allocate(capacity: 1)
        uv_async_init(uvLoop, wakeup) { handle in
            let scheduler = Unmanaged<LoopScheduler>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
            scheduler.io.noteAwake()
            scheduler.drainQueue()
        }
        // The loop holds it unretained: it is closed before the scheduler can die.
        wakeup.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        if !loopClosed {
            // The loop never ran to its end: close the two handles and let them finish.
            closeOwnHandles()
            uv_run(uvLoop, UV_RUN_DEFAULT)
            let status = uv_loop_close(uvLoop)
            precondition(status == 0, "uv_loop_close failed in deinit: \(status)")
        }
        uvLoop.deallocate()
    }

    // MARK: Scheduler

    public var now: SchedulerTime {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return SchedulerTime(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable? {
        let disposable = Disposable()
        enqueue(WorkItem(action: action, cancel: disposable))
        return disposable
    }

    @discardableResult
    public func after(_ time: SchedulerTime, _ action: @escaping @Sendable () -> Void) -> Disposable? {
        LoopTimer(loop: self, deadline: time, interval: nil, action: action).start()
    }

    @discardableResult
    public func after(
        _ time: SchedulerTime, repeatingEvery interval: Duration, leeway: Duration,
        _ action: @escaping @Sendable () -> Void
    ) -> Disposable? {
        LoopTimer(loop: self, deadline: time, interval: interval, action: action).start()
    }

    /// How long the loop's turns took so far. Loop thread (`LoopGroup.turnLengths(ofLoop:)`
    /// reads a group's loops from any).
    public var turnLengths: TurnLengths { io.sharedStatistics?.recordedTurnLengths ?? io.turnLengths }

    /// How many callbacks the loop has begun (`LoopIO.callbacks`): while it is unchanged, the
    /// code running is one callback's, and everything it handles came in before it began (a
    /// read's bytes, a job posted from another thread). Loop thread.
    public var callbackCount: UInt64 { io.callbacks }

    /// The number of timer handles now armed (one-shot timers waiting, repeating timers
    /// running). Readable from any thread.
    public var armedTimerCount: Int { handles.armedTimerCount }

    /// The number of handle-owning objects of this loop (timers, signal watchers, listeners,
    /// connections) now alive, open or not. Readable from any thread; after shutdown, and once
    /// no one holds them, it is 0.
    public var liveHandleOwners: Int { handles.liveCount }

    // MARK: Loop thread

    /// Whether the calling thread is the one running this loop.
    public var isOnLoopThread: Bool { loopThread.load(ordering: .relaxed) == runnel_thread_self() }

    /// Stops a debug build when called off the loop thread while the loop runs; nothing in a
    /// release build. For the entry points whose state is the loop thread's alone: a call
    /// from elsewhere is a data race (and a subscription made there would not run on the loop).
    @inline(__always)
    public func assertOnLoopThread(file: StaticString = #fileID, line: UInt = #line) {
        assert(
            loopThread.load(ordering: .relaxed) == 0 || isOnLoopThread,
            "called off the loop thread", file: file, line: line)
    }

    /// Has `work` run once at the end of this turn, with the mailboxes' batches, before the
    /// loop writes its sockets (it asks again for the next turn). The loop's thread.
    public func atTurnEnd(_ work: any TurnEndWork) {
        assertOnLoopThread()
        io.atTurnEnd(work)
    }

    /// Runs `body` on the loop thread: at once when called there, otherwise through the
    /// queue. Dropped after shutdown.
    func execute(_ body: @escaping @Sendable () -> Void) {
        if isOnLoopThread {
            body()
        } else {
            enqueue(WorkItem(action: body, cancel: nil))
        }
    }

    /// Queues `body` to run on the loop thread, after the work queued before it, even when
    /// called there (`LoopInbox`'s drains). Dropped after shutdown.
    func post(_ body: @escaping @Sendable () -> Void) {
        enqueue(WorkItem(action: body, cancel: nil))
    }

    private func enqueue(_ item: WorkItem) {
        queueLock.lock()
        defer { queueLock.unlock() }
        // After shutdown began the async handle is closed (or closing): work is dropped.
        guard !queueClosed else { return }
        queue.append(item)
        if !wakeupPending {
            wakeupPending = true
            // Under the lock, so it cannot race with the handle being closed.
            uv_async_send(wakeup)
        }
    }

    /// Runs queued work in FIFO order. Bounded, so a flood of work cannot starve I/O: what is
    /// left is picked up on the next loop iteration.
    private func drainQueue() {
        for _ in 0..<8 {
            queueLock.lock()
            if queue.isEmpty {
                wakeupPending = false
                queueLock.unlock()
                return
            }
            swap(&queue, &draining)
            queueLock.unlock()
            for item in draining where !(item.cancel?.isDisposed ?? false) {
                // Work queued behind a shutdown is dropped, like work queued after it.
                if isShuttingDown { break }
                io.noteCallback()
                item.action()
            }
            draining.removeAll(keepingCapacity: true)
        }
        queueLock.withLock {
            if queueClosed || queue.isEmpty {
                wakeupPending = false
            } else {
                uv_async_send(wakeup)
            }
        }
    }

    /// Runs the loop on the calling thread until shutdown has closed every handle, with
    /// `currentScheduler` set to this scheduler the whole time. Returns `uv_loop_close`'s result.
    func runLoop() -> Int32 {
        let previous = loopThread.exchange(runnel_thread_self(), ordering: .acquiringAndReleasing)
        precondition(previous == 0, "the loop is already running on another thread")
        performAsCurrent {
            // The async handle keeps the loop alive until shutdown closes it.
            _ = uv_run(uvLoop, UV_RUN_DEFAULT)
        }
        let status = uv_loop_close(uvLoop)
        if status == 0 { loopClosed = true }
        loopThread.store(0, ordering: .releasing)
        closeStatus.withLock { $0 = status }
        return status
    }

    /// `uv_loop_close`'s result once the loop has finished, else nil.
    var finalStatus: Int32? { closeStatus.withLock { $0 } }

    // MARK: Shutdown

    /// Begins shutdown (loop thread): stops the queue, closes every owner's handles and the
    /// loop's own; `uv_run` then returns once their close callbacks have run.
    func beginShutdown() {
        guard !isShuttingDown else { return }
        isShuttingDown = true
        for owner in handles.allOpen { owner.closeForShutdown() }
        closeOwnHandles()
    }

    private func closeOwnHandles() {
        queueLock.withLock {
            queueClosed = true
            queue.removeAll()
        }
        guard !ownHandlesClosed else { return }
        ownHandlesClosed = true
        // The handles' memory is freed only once libuv is done with them.
        uv_close(runnel_async_as_handle(wakeup)) { handle in handle!.deallocate() }
        io.close()
    }
}

/// Ignores SIGPIPE for the process, once (a lazily initialised global).
private let ignoreBrokenPipe: Void = { _ = signal(SIGPIPE, SIG_IGN) }()
