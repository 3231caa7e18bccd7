import Synchronization

/// The lines waiting to be written to one connection, and the thread that writes them.
///
/// Callers queue their request lines (`enqueue`) and go on; the writer thread takes everything
/// queued at once and writes it with one `send`, so a publisher faster than the network has its
/// lines gathered into large writes instead of a system call each (which, with TCP_NODELAY,
/// would also be a packet each). Past `highWater` queued bytes, `enqueue` waits until the writer
/// has taken them: a publisher cannot outrun the server by more than that.
///
/// Thread rules: `enqueue`, `finish` and `stop` from any task or thread; `state` behind its
/// mutex; the writer thread alone sends. Lifetime rule: the writer thread holds it (and its
/// socket) until it is stopped, or finished and drained.
final class Outbox: Sendable {
    static let highWater = 1 << 20

    let socket: LineSocket
    private let state = Mutex(State())
    private let wake = Semaphore()

    /// What the callers and the writer share. Thread rules: only inside `state`'s mutex.
    /// Lifetime rule: the outbox's.
    private struct State {
        var queue: [UInt8] = []
        /// Whether the writer waits on `wake` for lines.
        var writerIdle = false
        /// Set by `stop` (at once) and `finish` (once what is queued is written).
        var stopping = false
        var finishing = false
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        var finishWaiters: [CheckedContinuation<Void, Never>] = []
    }

    init(socket: LineSocket) {
        self.socket = socket
        DetachedThread.start { [self] in run() }
    }

    /// Queues `line`, first waiting while the queue is past `highWater`. False once the outbox
    /// has stopped (the connection is gone).
    func enqueue(_ line: [UInt8]) async -> Bool {
        while true {
            let (accepted, wakeWriter) = state.withLock { state -> (Bool?, Bool) in
                if state.stopping || state.finishing { return (false, false) }
                if state.queue.count >= Self.highWater { return (nil, false) }
                state.queue.append(contentsOf: line)
                defer { state.writerIdle = false }
                return (true, state.writerIdle)
            }
            if wakeWriter { wake.signal() }
            if let accepted { return accepted }
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.stopping || state.queue.count < Self.highWater { return true }
                    state.roomWaiters.append(waiter)
                    return false
                }
                if now { waiter.resume() }
            }
        }
    }

    /// Queues a line at once, past `highWater` too: the calls that wait for a reply (a few small
    /// lines), whose caller must register the wait before the line can be written. False once
    /// the outbox has stopped.
    func push(_ line: [UInt8]) -> Bool {
        let (accepted, wakeWriter) = state.withLock { state -> (Bool, Bool) in
            if state.stopping || state.finishing { return (false, false) }
            state.queue.append(contentsOf: line)
            defer { state.writerIdle = false }
            return (true, state.writerIdle)
        }
        if wakeWriter { wake.signal() }
        return accepted
    }

    /// Stops at once: what is queued is dropped (the connection is gone).
    func stop() {
        let (waiters, wakeWriter) = state.withLock { state in
            state.stopping = true
            defer { state.roomWaiters = [] }
            return (state.roomWaiters + state.finishWaiters, state.writerIdle)
        }
        if wakeWriter { wake.signal() }
        for waiter in waiters { waiter.resume() }
    }

    /// Writes what is queued, then stops; returns once it has (`RunnelClient.close`).
    func finish() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let (now, wakeWriter) = state.withLock { state -> (Bool, Bool) in
                if state.stopping { return (true, false) }
                state.finishing = true
                state.finishWaiters.append(waiter)
                return (false, state.writerIdle)
            }
            if wakeWriter { wake.signal() }
            if now { waiter.resume() }
        }
    }

    /// The writer thread: takes everything queued, writes it, and so on until stopped.
    private func run() {
        var batch: [UInt8] = []
        while true {
            let (taken, roomMade, done) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>], Bool) in
                if state.stopping { return (false, [], true) }
                if state.queue.isEmpty {
                    if state.finishing {
                        state.stopping = true
                        defer { state.finishWaiters = [] }
                        return (false, state.finishWaiters, true)
                    }
                    state.writerIdle = true
                    return (false, [], false)
                }
                swap(&state.queue, &batch)
                defer { state.roomWaiters = [] }
                return (true, state.roomWaiters, false)
            }
            for waiter in roomMade { waiter.resume() }
            if done { return }
            guard taken else {
                wake.wait()
                continue
            }
            do throws(RunnelError) {
                try socket.send(batch)
            } catch {
                // The reader sees the connection end too, and fails what waits on it.
                socket.shutdown()
                stop()
                return
            }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
