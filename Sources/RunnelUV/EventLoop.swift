import CLibUV
import Runnel

/// Owns one libuv loop and runs it, on a thread of its own (`start`) or on the caller's
/// (`run`, for a daemon's main loop).
///
/// Thread rules: every method may be called from any thread. Work for the loop goes through
/// `scheduler`; handles (timers, signals, TCP) are created and used on the loop thread.
///
/// Shutdown: `shutdown()` closes every handle on the loop through its close callback, then
/// `uv_loop_close` must return 0 (`closeStatus`). A loop started on its own thread keeps itself
/// alive until it has shut down.
public final class EventLoop: @unchecked Sendable {
    /// The scheduler running work on this loop.
    public let scheduler: LoopScheduler

    private struct State {
        var thread: NamedThread?
        var started = false
    }
    private let state = Locked(State())

    /// A loop that is not running yet.
    public init() {
        scheduler = LoopScheduler()
    }

    /// A new loop already running on a thread of its own.
    public static func started(name: String = "runnel-loop") -> EventLoop {
        let loop = EventLoop()
        loop.start(name: name)
        return loop
    }

    /// Starts the loop on a new thread named `name`.
    public func start(name: String = "runnel-loop") {
        state.withLock { state in
            precondition(!state.started, "the loop was already started")
            state.started = true
            state.thread = NamedThread(name: name) { [self] in _ = scheduler.runLoop() }
        }
    }

    /// Runs the loop on the calling thread until `shutdown()` (called from a loop callback or
    /// from another thread) has closed everything. Returns `uv_loop_close`'s result: 0 when
    /// every handle was closed.
    @discardableResult
    public func run() -> Int32 {
        state.withLock { state in
            precondition(!state.started, "the loop was already started")
            state.started = true
        }
        return scheduler.runLoop()
    }

    /// Whether `start` or `run` has been called.
    var hasStarted: Bool { state.withLock { $0.started } }

    /// Whether the calling thread is the loop's.
    public var isOnLoopThread: Bool { scheduler.isOnLoopThread }

    /// Shuts the loop down: drops work not yet run, closes every open handle (connections,
    /// listeners, timers, signal watchers) and lets their close callbacks run, so the loop
    /// ends and `uv_loop_close` runs.
    ///
    /// From another thread, for a loop on its own thread, it waits for the loop thread to end
    /// and returns `uv_loop_close`'s result (0 = clean). From the loop thread it only begins
    /// the shutdown and returns nil; `run()` then returns when it is done.
    @discardableResult
    public func shutdown() -> Int32? {
        scheduler.execute { [scheduler] in scheduler.beginShutdown() }
        if scheduler.isOnLoopThread { return nil }
        let thread: NamedThread? = state.withLock { state in
            defer { state.thread = nil }
            return state.thread
        }
        guard let thread else { return scheduler.finalStatus }
        thread.join()
        return scheduler.finalStatus
    }

    /// `uv_loop_close`'s result once the loop has finished, else nil.
    public var closeStatus: Int32? { scheduler.finalStatus }
}
