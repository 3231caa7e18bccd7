import CLibUV
import Runnel

/// The I/O state one loop's connections share: the read buffer, the pool of write chunks (`WriteChunkPool`), the
/// list of connections with output to flush, and the readers paused until the next turn.
///
/// Once per loop iteration, in the check phase (after that iteration's I/O callbacks), it
/// runs the turn-end work asked for (`atTurnEnd`: mailboxes sending their batch to another
/// loop) and writes the output every connection
/// queued during the iteration, then resumes the readers that spent their read budget. Connections
/// ask for these (`needsFlush`, `atTurnEnd`, `resumeReadingNextTurn`); this type only calls
/// back `TCPConnection.flush()`, `TurnEndWork.turnEnded()` and `resumeAfterTurn()`. What the
/// close callbacks, which libuv runs after the check phase, ask for is done in the prepare
/// phase, before the loop waits.
///
/// It also measures how long each turn works (`turnLengths`): from the loop's wake-up, which
/// the first callback of the turn marks (`noteAwake()`; the check phase when no marked
/// callback ran, as after a timer's timeout), to the prepare phase, where the loop is about to
/// wait in the kernel again. Its own clock readings, two per turn, which depend on no libuv
/// metric.
///
/// Thread rules: loop thread only (every caller is a connection's libuv callback or write).
/// Lifetime rule: made and owned by the loop's `LoopScheduler`; its `uv_check_t` and
/// `uv_prepare_t` are opened in `init` and closed by `close()` when the loop shuts down, their
/// memory freed in the close callbacks. The handles hold this object unretained: the scheduler
/// closes them before either can go.
final class LoopIO {
    /// The one read buffer of the loop: libuv calls alloc and read back to back on this
    /// thread, and a connection consumes the bytes before returning from its read callback.
    let readBuffer: UnsafeMutableRawPointer
    let readBufferSize = 256 * 1024
    /// Counts loop turns (check phases), so a connection can tell when its read budget renews.
    private(set) var turn = 0
    /// Counts the callbacks the loop has begun (a read, a completed write, a job of its queue,
    /// a timer, an accept, a signal) and its waits in the kernel: what one callback publishes
    /// came in before it began (`LoopScheduler.callbackCount`).
    private(set) var callbacks: UInt64 = 0
    /// How long the turns worked: a lone loop's (a group's loops count theirs in their
    /// `sharedStatistics`).
    private(set) var turnLengths = TurnLengths()
    /// When the loop woke for the turn under way (`uv_hrtime`, nanoseconds); 0 while it waits.
    private var turnStart: UInt64 = 0

    private let flushCheck: UnsafeMutablePointer<uv_check_t>
    private let turnEnd: UnsafeMutablePointer<uv_prepare_t>
    private var isClosed = false
    /// Connections with queued output, flushed once per loop iteration.
    private var connectionsToFlush: [TCPConnection] = []
    /// The list being walked, swapped with the two lists above so that walking them does not
    /// allocate.
    private var walking: [TCPConnection] = []
    /// The spare write chunks the loop's connections share.
    let chunks = WriteChunkPool()
    /// Connections whose reading paused for the rest of this turn (their read budget is spent).
    private var pausedReaders: [TCPConnection] = []
    /// What else hands over output once per turn (the mailboxes to other loops), before the
    /// connections' flush; and the list being walked.
    private var turnEndWork: [any TurnEndWork] = []
    private var walkingWork: [any TurnEndWork] = []
    /// When the loop is one of a `LoopGroup`'s, its statistics, whose copy of the turn lengths
    /// it updates at the end of every turn for other threads to read.
    var sharedStatistics: LoopStatistics?

    init(loop: UnsafeMutablePointer<uv_loop_t>) {
        readBuffer = .allocate(byteCount: readBufferSize, alignment: 16)
        flushCheck = .allocate(capacity: 1)
        turnEnd = .allocate(capacity: 1)
        uv_check_init(loop, flushCheck)
        flushCheck.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_check_start(flushCheck) { handle in
            Unmanaged<LoopIO>.fromOpaque(handle!.pointee.data).takeUnretainedValue().checkPhase()
        }
        uv_prepare_init(loop, turnEnd)
        turnEnd.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_prepare_start(turnEnd) { handle in
            Unmanaged<LoopIO>.fromOpaque(handle!.pointee.data).takeUnretainedValue().prepareToWait()
        }
        // Neither keeps the loop alive on its own: the scheduler's wake-up handle does.
        uv_unref(runnel_check_as_handle(flushCheck))
        uv_unref(runnel_prepare_as_handle(turnEnd))
    }

    deinit { readBuffer.deallocate() }

    /// Closes the check handle (loop shutdown). Idempotent.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        uv_close(runnel_check_as_handle(flushCheck)) { handle in handle!.deallocate() }
        uv_close(runnel_prepare_as_handle(turnEnd)) { handle in handle!.deallocate() }
    }

    // MARK: Once per turn

    /// Asks for `connection`'s queued output to be written at the end of this loop iteration.
    func needsFlush(_ connection: TCPConnection) {
        connectionsToFlush.append(connection)
    }

    /// Asks for `work` to run once at the end of this loop iteration, before the connections'
    /// flush (it asks again for the next).
    func atTurnEnd(_ work: any TurnEndWork) {
        turnEndWork.append(work)
    }

    /// Asks for reading on `connection` to resume after this turn's output is flushed.
    func resumeReadingNextTurn(_ connection: TCPConnection) {
        pausedReaders.append(connection)
    }

    /// Writes every connection's queued output, one `uv_write` each, then resumes the readers
    /// that used up their budget.
    private func checkPhase() {
        noteAwake()
        flushAll()
        turn &+= 1
        if !pausedReaders.isEmpty {
            swap(&pausedReaders, &walking)
            for connection in walking { connection.resumeAfterTurn() }
            walking.removeAll(keepingCapacity: true)
        }
    }

    /// Runs the turn-end work, then writes every connection's queued output, until neither
    /// asks for more. Output for other loops crosses first, so their loops write it while this
    /// one writes its own (a fan-out to thousands of connections is thousands of `write`s).
    private func flushAll() {
        repeat {
            // A mailbox's batch, which may ask for more work.
            while !turnEndWork.isEmpty {
                swap(&turnEndWork, &walkingWork)
                for work in walkingWork { work.turnEnded() }
                walkingWork.removeAll(keepingCapacity: true)
            }
            while !connectionsToFlush.isEmpty {
                swap(&connectionsToFlush, &walking)
                for connection in walking { connection.flush() }
                walking.removeAll(keepingCapacity: true)
            }
        } while !turnEndWork.isEmpty
    }

    // MARK: Turn lengths

    /// Counts a callback, and marks the loop awake once per turn: the callbacks libuv runs when
    /// its poll returns (a read, a completed write, the scheduler's wake-up, an accept, a
    /// signal) call this first, so a turn's length counts from the wake-up.
    @inline(__always)
    func noteAwake() {
        callbacks &+= 1
        if turnStart == 0 { turnStart = uv_hrtime() }
    }

    /// A callback that does not mark the loop awake (a timer's, a job of the queue) begins.
    @inline(__always)
    func noteCallback() { callbacks &+= 1 }

    /// The loop is about to wait in the kernel: the turn under way has ended.
    private func prepareToWait() {
        callbacks &+= 1
        // What the close callbacks (which run after the check phase) asked for goes out before
        // the loop waits: a mailbox's last batch, a write.
        if !connectionsToFlush.isEmpty || !turnEndWork.isEmpty { flushAll() }
        guard turnStart != 0 else { return }
        let length = uv_hrtime() &- turnStart
        turnStart = 0
        // Another loop's lengths are counted where any thread may read them (an uncontended
        // lock a turn): a copy published each turn would copy the buckets' array each time.
        guard let sharedStatistics else { return turnLengths.record(nanoseconds: length) }
        sharedStatistics.record(turn: length)
    }
}

/// Work a loop does once at the end of a turn when asked (`LoopScheduler.atTurnEnd`): loop
/// thread.
public protocol TurnEndWork: AnyObject {
    func turnEnded()
}
