import CLibUV
import Runnel
import Synchronization

/// One `uv_timer_t`: a one-shot or repeating timer of a `LoopScheduler`.
///
/// Thread rules: `start` and the disposable it returns may be used from any thread; the handle
/// is only touched on the loop thread (other threads hop there through the loop's queue). A
/// cancelled timer never runs its action again, even if libuv fires it before the hop lands.
///
/// Lifetime rule: the timer is retained through `handle->data` from `uv_timer_init` until the
/// close callback, which releases it and frees the handle. A one-shot timer closes its handle
/// once it has fired; cancelling stops the timer and closes the handle.
///
/// Deadlines are rounded up to libuv's whole milliseconds on the loop's clock (which lags the
/// precise monotonic clock), so a timer never fires before its deadline; timers due in the
/// same millisecond fire in the order they were armed.
final class LoopTimer: HandleOwner, @unchecked Sendable {
    private enum State { case new, armed, closing, closed }

    private let loop: LoopScheduler
    private let deadline: SchedulerTime
    private let interval: Duration?
    private let action: @Sendable () -> Void
    private let handle: UnsafeMutablePointer<uv_timer_t>
    private let cancelled = Atomic<Bool>(false)
    /// Loop thread only.
    private var state = State.new

    init(loop: LoopScheduler, deadline: SchedulerTime, interval: Duration?, action: @escaping @Sendable () -> Void) {
        self.loop = loop
        self.deadline = deadline
        self.interval = interval
        self.action = action
        handle = .allocate(capacity: 1)
        loop.handles.ownerCreated()
    }

    deinit {
        // Freed here only if libuv never saw it; otherwise the close callback freed it.
        if state == .new { handle.deallocate() }
        loop.handles.ownerDestroyed()
    }

    /// Arms the timer on the loop and returns the disposable that cancels it.
    func start() -> Disposable {
        loop.execute { [self] in arm() }
        return Disposable { [self] in cancel() }
    }

    private func arm() {
        guard state == .new, !cancelled.load(ordering: .acquiring), !loop.isShuttingDown else { return }
        uv_timer_init(loop.uvLoop, handle)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.handles.register(self)
        state = .armed
        loop.handles.timerArmed()
        // libuv's deadline is `uv_now + timeout`; aim it at the deadline's millisecond, rounded up.
        let deadlineMilliseconds = UInt64(max(0, (deadline.nanoseconds + 999_999) / 1_000_000))
        let loopNow = uv_now(loop.uvLoop)
        let timeout = deadlineMilliseconds > loopNow ? deadlineMilliseconds - loopNow : 0
        let repeatMilliseconds = interval.map { UInt64(max(1, ($0.nanoseconds + 999_999) / 1_000_000)) } ?? 0
        uv_timer_start(
            handle,
            { handle in
                Unmanaged<LoopTimer>.fromOpaque(handle!.pointee.data).takeUnretainedValue().fire()
            }, timeout, repeatMilliseconds)
    }

    private func fire() {
        loop.io.noteCallback()
        guard state == .armed else { return }
        if cancelled.load(ordering: .acquiring) {
            close()
            return
        }
        if interval == nil {
            // One-shot: done with the handle before running the action, which may re-enter.
            close()
        }
        action()
    }

    /// Cancels from any thread: the flag stops any later fire at once, the hop closes.
    private func cancel() {
        cancelled.store(true, ordering: .releasing)
        loop.execute { [self] in close() }
    }

    func closeForShutdown() { close() }

    /// Stops and closes the handle (loop thread). Idempotent.
    private func close() {
        guard state == .armed else { return }
        loop.handles.timerDisarmed()
        state = .closing
        uv_timer_stop(handle)
        uv_close(runnel_timer_as_handle(handle)) { handle in
            let timer = Unmanaged<LoopTimer>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            timer.state = .closed
            timer.loop.handles.unregister(timer)
            handle!.deallocate()
        }
    }
}
