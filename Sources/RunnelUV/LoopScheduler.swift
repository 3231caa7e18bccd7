import CLibUV
import Runnel
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A `Scheduler` running work on one libuv loop, and the owner of that loop's state.
///
/// Thread rules: `schedule`, `after` and every disposable they return may be used from any
/// thread. Work runs on the loop thread, one block at a time, with `currentScheduler` set to
/// this scheduler (set once while the loop runs, so every libuv callback sees it too).
/// `schedule` puts work on one lock-protected FIFO queue, whichever thread calls it (the loop's
/// own thread included), and wakes the loop with an `uv_async_t`: blocks scheduled by one
/// thread run in the order it scheduled them, and never interleave out of order with blocks
/// from the loop thread. Timers are `uv_timer_t` handles (see `LoopTimer`).
///
/// Lifetime rule: the `uv_loop_t`, the wake-up `uv_async_t` and the flush `uv_check_t` are
/// allocated here. The two handles are closed when the loop shuts down (their memory is freed
/// in their close callbacks); the loop memory is freed in `deinit`, after `uv_loop_close`.
/// Handle owners (timers, connections, ...) hold this scheduler strongly, so it outlives them.
public final class LoopScheduler: Scheduler, @unchecked Sendable {
    /// One block on the queue; `cancel` is checked just before it runs.
    struct WorkItem {
        let action: @Sendable () -> Void
        let cancel: Disposable?
    }

    let uvLoop: UnsafeMutablePointer<uv_loop_t>
    private let wakeup: UnsafeMutablePointer<uv_async_t>
    private let flushCheck: UnsafeMutablePointer<uv_check_t>

    // Guarded by `queueLock`.
    private let queueLock = Lock()
    private var queue: [WorkItem] = []
    private var queueClosed = false
    /// An `uv_async_send` has been made and the drain has not yet found the queue empty.
    private var wakeupPending = false

    /// The id of the thread running the loop, or 0 while none does.
    private let loopThread = Atomic<UInt>(0)
    private let armedTimers = Atomic<Int>(0)
    private let liveOwners = Atomic<Int>(0)

    // Loop-thread state.
    /// The spare array the drain swaps with `queue`, so draining does not allocate.
    private var draining: [WorkItem] = []
    /// Every open handle owner, so shutdown can close them all.
    private var owners: [ObjectIdentifier: any HandleOwner] = [:]
    /// Connections with queued output, flushed once per loop iteration by `flushCheck`.
    var connectionsToFlush: [TCPConnection] = []
    private var spareFlushList: [TCPConnection] = []
    private var spareChunks: [WriteChunk] = []
    /// Connections whose reading paused for the rest of this turn (their read budget is spent).
    private var pausedReaders: [TCPConnection] = []
    /// Counts loop turns (check phases), so a connection can tell when its read budget renews.
    private(set) var turn = 0
    /// The one read buffer of the loop: libuv calls alloc and read back to back on this
    /// thread, and a connection consumes the bytes before returning from its read callback.
    let readBuffer: UnsafeMutableRawPointer
    let readBufferSize = 256 * 1024
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
        readBuffer = .allocate(byteCount: readBufferSize, alignment: 16)

        wakeup = .allocate(capacity: 1)
        flushCheck = .allocate(capacity: 1)
        uv_async_init(uvLoop, wakeup) { handle in
            LoopScheduler.owner(of: runnel_async_as_handle(handle!)).drainQueue()
        }
        uv_check_init(uvLoop, flushCheck)
        // The loop holds these two unretained: they are closed before the scheduler can die.
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        wakeup.pointee.data = opaque
        flushCheck.pointee.data = opaque
        uv_check_start(flushCheck) { handle in
            LoopScheduler.owner(of: runnel_check_as_handle(handle!)).flushConnections()
        }
        // Neither keeps the loop alive on its own: `run` keeps it alive until shutdown.
        uv_unref(runnel_check_as_handle(flushCheck))
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
        readBuffer.deallocate()
    }

    private static func owner(of handle: UnsafeMutablePointer<uv_handle_t>) -> LoopScheduler {
        Unmanaged<LoopScheduler>.fromOpaque(handle.pointee.data).takeUnretainedValue()
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

    /// The number of timer handles now armed (one-shot timers waiting, repeating timers
    /// running). Readable from any thread.
    public var armedTimerCount: Int { armedTimers.load(ordering: .relaxed) }

    /// The number of handle-owning objects of this loop (timers, signal watchers, listeners,
    /// connections) now alive, open or not. Readable from any thread; after shutdown, and once
    /// no one holds them, it is 0.
    public var liveHandleOwners: Int { liveOwners.load(ordering: .relaxed) }

    func handleOwnerCreated() { liveOwners.add(1, ordering: .relaxed) }
    func handleOwnerDestroyed() { liveOwners.subtract(1, ordering: .relaxed) }

    func timerArmed() { armedTimers.add(1, ordering: .relaxed) }
    func timerDisarmed() { armedTimers.subtract(1, ordering: .relaxed) }

    // MARK: Loop thread

    /// Whether the calling thread is the one running this loop.
    public var isOnLoopThread: Bool { loopThread.load(ordering: .relaxed) == runnel_thread_self() }

    /// Runs `body` on the loop thread: at once when called there, otherwise through the
    /// queue. Dropped after shutdown.
    func execute(_ body: @escaping @Sendable () -> Void) {
        if isOnLoopThread {
            body()
        } else {
            enqueue(WorkItem(action: body, cancel: nil))
        }
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

    // MARK: Handle owners

    func register(_ owner: any HandleOwner) { owners[ObjectIdentifier(owner)] = owner }
    func unregister(_ owner: any HandleOwner) { owners[ObjectIdentifier(owner)] = nil }

    /// The open handle owners of the given type (loop thread).
    func openOwners<T>(of type: T.Type) -> [T] { owners.values.compactMap { $0 as? T } }

    /// Begins shutdown (loop thread): stops the queue, closes every owner's handles and the
    /// loop's own; `uv_run` then returns once their close callbacks have run.
    func beginShutdown() {
        guard !isShuttingDown else { return }
        isShuttingDown = true
        for owner in Array(owners.values) { owner.closeForShutdown() }
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
        uv_close(runnel_check_as_handle(flushCheck)) { handle in handle!.deallocate() }
    }

    // MARK: Output flushing

    /// A write chunk of at least `minimumCapacity` bytes, reused when one is spare.
    func takeChunk(minimumCapacity: Int) -> WriteChunk {
        if minimumCapacity <= TCPConnection.chunkSize, let chunk = spareChunks.popLast() { return chunk }
        return WriteChunk(capacity: max(TCPConnection.chunkSize, minimumCapacity))
    }

    /// Takes back a chunk no write request points into any more.
    func recycleChunk(_ chunk: WriteChunk) {
        guard chunk.capacity == TCPConnection.chunkSize, spareChunks.count < 64 else { return }
        chunk.used = 0
        chunk.sealed = 0
        spareChunks.append(chunk)
    }

    /// Asks for `connection`'s queued output to be written at the end of this loop iteration.
    func needsFlush(_ connection: TCPConnection) {
        connectionsToFlush.append(connection)
    }

    /// Asks for reading on `connection` to resume after this turn's output is flushed.
    func resumeReadingNextTurn(_ connection: TCPConnection) {
        pausedReaders.append(connection)
    }

    /// Writes every connection's queued output, one `uv_write` each (the check phase, after
    /// this iteration's I/O callbacks), then resumes the readers that used up their budget.
    private func flushConnections() {
        while !connectionsToFlush.isEmpty {
            swap(&connectionsToFlush, &spareFlushList)
            for connection in spareFlushList { connection.flush() }
            spareFlushList.removeAll(keepingCapacity: true)
        }
        turn &+= 1
        if !pausedReaders.isEmpty {
            swap(&pausedReaders, &spareFlushList)
            for connection in spareFlushList { connection.resumeAfterTurn() }
            spareFlushList.removeAll(keepingCapacity: true)
        }
    }
}

/// Ignores SIGPIPE for the process, once (a lazily initialised global).
private let ignoreBrokenPipe: Void = { _ = signal(SIGPIPE, SIG_IGN) }()
