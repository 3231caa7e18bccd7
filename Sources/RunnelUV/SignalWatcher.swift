import CLibUV
import Runnel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One `uv_signal_t` watching one POSIX signal number and reporting each delivery.
///
/// Thread rules: created, started and closed on the loop thread; `report` runs there.
///
/// Lifetime rule: retained through `handle->data` from `uv_signal_init` until the close
/// callback, which releases it and frees the handle.
final class SignalWatcher: HandleOwner {
    private let loop: LoopScheduler
    private let handle: UnsafeMutablePointer<uv_signal_t>
    private var report: ((Int32) -> Void)?
    private var isOpen = false

    init(loop: LoopScheduler, report: @escaping (Int32) -> Void) {
        self.loop = loop
        self.report = report
        handle = .allocate(capacity: 1)
        loop.handles.ownerCreated()
    }

    deinit {
        if !isOpen && report != nil { handle.deallocate() }
        loop.handles.ownerDestroyed()
    }

    /// Starts watching `number`. Loop thread only.
    func start(_ number: Int32) throws {
        // Threads made by Dispatch block the usual POSIX signals, and a thread inherits its
        // creator's mask: let this one reach the loop thread at least.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, number)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        guard !loop.isShuttingDown else { throw UVError(code: UV_ECANCELED.rawValue, operation: "uv_signal_init") }
        try UVError.check(uv_signal_init(loop.uvLoop, handle), "uv_signal_init")
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        isOpen = true
        loop.handles.register(self)
        let status = uv_signal_start(
            handle,
            { handle, number in
                let watcher = Unmanaged<SignalWatcher>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
                watcher.loop.io.noteAwake()
                watcher.report?(number)
            }, number)
        if status < 0 {
            close()
            throw UVError(code: status, operation: "uv_signal_start(\(number))")
        }
    }

    func closeForShutdown() { close() }

    /// Stops watching and closes the handle. Loop thread only; idempotent.
    func close() {
        guard isOpen, report != nil else { return }
        report = nil
        uv_signal_stop(handle)
        uv_close(runnel_signal_as_handle(handle)) { handle in
            let watcher = Unmanaged<SignalWatcher>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            watcher.isOpen = false
            watcher.loop.handles.unregister(watcher)
            handle!.deallocate()
        }
    }
}

extension LoopScheduler {
    /// The POSIX signals `numbers` (`SIGTERM`, `SIGINT`, `SIGHUP`, ...) delivered to the
    /// process, as values on the loop thread. Each subscription installs `uv_signal_t`
    /// handlers while it lasts; disposing it stops and closes them. Fails with `UVError` if a
    /// handler cannot be installed.
    public func signals(_ numbers: [Int32]) -> Signal<Int32> {
        Signal.create { [self] subscriber in
            let subscription = CompoundDisposable()
            execute { [self] in
                guard !subscription.isDisposed, !isShuttingDown else { return }
                var watchers: [SignalWatcher] = []
                for number in numbers {
                    let watcher = SignalWatcher(loop: self) { subscriber.sendNext($0) }
                    do {
                        try watcher.start(number)
                    } catch {
                        watchers.forEach { $0.close() }
                        subscriber.sendError(error)
                        return
                    }
                    watchers.append(watcher)
                }
                let stop = LoopBound(watchers, loop: self)
                subscription.add { [self] in execute { stop.value.forEach { $0.close() } } }
            }
            return subscription
        }
    }
}

extension EventLoop {
    /// The POSIX signals `numbers` delivered to the process; see `LoopScheduler.signals(_:)`.
    public func signals(_ numbers: [Int32]) -> Signal<Int32> { scheduler.signals(numbers) }
}
