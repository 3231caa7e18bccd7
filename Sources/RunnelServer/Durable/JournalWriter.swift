import Runnel
import RunnelUV

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The durable journal's writer: a thread of its own that drains a queue of changes and
/// commits them in batches, one transaction per batch (group commit), so the loop never
/// touches SQLite and never waits for a disk.
///
/// The loop appends changes (`append`, cheap: a lock, an array append, a wake-up only when
/// the writer sleeps) and learns what was committed through `onCommit`, which the writer hands
/// to the loop's scheduler (a libuv async handle wakes the loop). Changes are counted from 1
/// in the order appended; a commit report says how many are on disk (or failed) so far.
///
/// With `fsync = everysec` the writer also makes a fully synced commit about once a second
/// while anything is unsynced. When a batch fails (a full disk, an I/O error) it is rolled
/// back: under `always` it is given up (nothing of it was applied anywhere, and its waiters
/// are told it failed); under `everysec` and `no` its values were already served, so it is
/// kept and tried again every second until it succeeds, and the store refuses new durable
/// changes meanwhile.
///
/// Thread rules: `append`, `statisticsNow` and `stop` from the loop thread; everything else on
/// the writer's thread. Lifetime rule: `stop()` drains the queue, marks the file cleanly
/// closed and joins the thread; the database is the writer's from `init` on.
final class JournalWriter: @unchecked Sendable {
    /// A report to the loop: changes up to `through` committed, or failed with `error`.
    struct CommitReport: Sendable {
        let through: UInt64
        let error: SQLiteError?
        /// Whether the writer keeps retrying a failed batch (everysec, no): new durable
        /// changes must be refused until a report without an error.
        let isRetrying: Bool
    }

    private let database: JournalDatabase
    private let fsync: FsyncMode
    private let onCommit: @Sendable (CommitReport) -> Void
    private var thread: NamedThread?

    // Guarded by `lock`; `wake` wakes the writer.
    private let lock = Lock()
    private let wake = LockCondition()
    private var queue: [JournalChange] = []
    /// How many changes the writer has taken from `queue` and not yet finished with.
    private var inProgress = 0
    private var appended: UInt64 = 0
    private var isWriterWaiting = false
    private var isStopping = false
    private var statistics = JournalStatistics()

    /// Starts the writer on `database`; `onCommit` runs on the writer thread and must hand
    /// the report to the loop.
    init(database: JournalDatabase, onCommit: @escaping @Sendable (CommitReport) -> Void) {
        self.database = database
        self.fsync = database.fsync
        self.onCommit = onCommit
        statistics.bytesOnDisk = database.bytesOnDisk
        thread = NamedThread(name: "runnel-journal") { [self] in run() }
    }

    /// Queues `change`; returns its number (from 1).
    @discardableResult
    func append(_ change: JournalChange) -> UInt64 {
        lock.lock()
        queue.append(change)
        appended += 1
        let number = appended
        if isWriterWaiting { wake.signal() }
        lock.unlock()
        return number
    }

    var statisticsNow: JournalStatistics {
        lock.lock()
        defer { lock.unlock() }
        var now = statistics
        now.queued = queue.count + inProgress
        return now
    }

    /// Writes everything queued, marks the file cleanly closed and ends the thread. Blocks
    /// the caller until then.
    func stop() {
        lock.lock()
        isStopping = true
        wake.signal()
        lock.unlock()
        thread?.join()
        thread = nil
    }

    // MARK: The writer thread

    private func run() {
        var committed: UInt64 = 0
        var lastSync = monotonicNanoseconds()
        var unsynced = false
        var retrying = false
        // The batch being written: everything queued when the writer last looked, taken by
        // swapping arrays, so the loop never waits on the lock for more than an append.
        var batch: [JournalChange] = []
        while true {
            lock.lock()
            while batch.isEmpty && queue.isEmpty && !isStopping && !(unsynced && fsync == .everysec) {
                isWriterWaiting = true
                wake.wait(holding: lock)
                isWriterWaiting = false
            }
            if batch.isEmpty && queue.isEmpty && isStopping {
                lock.unlock()
                break
            }
            if batch.isEmpty {
                swap(&batch, &queue)
                inProgress = batch.count
            }
            lock.unlock()

            if fsync == .everysec && unsynced && monotonicNanoseconds() - lastSync >= 1_000_000_000 {
                if (try? database.sync()) != nil {
                    unsynced = false
                    lastSync = monotonicNanoseconds()
                }
            }
            guard !batch.isEmpty else {
                if unsynced { sleep(until: lastSync + 1_000_000_000) }
                continue
            }
            let started = monotonicNanoseconds()
            do {
                try database.apply(batch[...])
                committed += UInt64(batch.count)
                unsynced = fsync == .everysec
                retrying = false
                finish(&batch, started: started)
                onCommit(CommitReport(through: committed, error: nil, isRetrying: false))
            } catch {
                if fsync == .always {
                    // Nothing of it was served: give it up and tell its waiters.
                    committed += UInt64(batch.count)
                    finish(&batch, started: started, failed: true)
                    onCommit(CommitReport(through: committed, error: error, isRetrying: false))
                } else {
                    if !retrying { onCommit(CommitReport(through: committed, error: error, isRetrying: true)) }
                    retrying = true
                    markFailing()
                    if isStoppingNow { break }
                    sleep(until: monotonicNanoseconds() + 1_000_000_000)
                }
            }
        }
        if fsync == .everysec && unsynced { try? database.sync() }
        if !retrying { try? database.closeCleanly() }
    }

    private var isStoppingNow: Bool {
        lock.lock()
        defer { lock.unlock() }
        return isStopping
    }

    /// Counts a done batch and empties it (keeping its storage for the next swap).
    private func finish(_ batch: inout [JournalChange], started: UInt64, failed: Bool = false) {
        batch.removeAll(keepingCapacity: true)
        let bytes = database.bytesOnDisk
        lock.lock()
        inProgress = 0
        if !failed { statistics.batches += 1 }
        statistics.lastCommitMicroseconds = (monotonicNanoseconds() - started) / 1000
        statistics.bytesOnDisk = bytes
        statistics.failing = failed
        lock.unlock()
    }

    private func markFailing() {
        lock.lock()
        statistics.failing = true
        lock.unlock()
    }

    /// Waits until `deadline` (monotonic nanoseconds) or a wake-up.
    private func sleep(until deadline: UInt64) {
        lock.lock()
        if !isStopping {
            isWriterWaiting = true
            wake.wait(holding: lock, until: deadline)
            isWriterWaiting = false
        }
        lock.unlock()
    }

    private func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
