import Glibc

/// Starts a detached POSIX thread running a closure: the client's reader, which blocks in
/// `poll` and `recv` (and in `connect` while reconnecting), and each connection's writer, which
/// blocks in `send`: work no task of the cooperative pool may do.
///
/// Thread rules: `start` from any thread. Lifetime rule: the closure is retained until the
/// thread has run it; the thread is detached, so nothing joins it (the client awaits its end).
enum DetachedThread {
    /// The closure, carried through `pthread_create`'s argument. Thread rules: made on the
    /// starting thread, run once on the new one. Lifetime rule: retained until it has run.
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    static func start(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { argument in
                let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        precondition(status == 0, "pthread_create failed: \(status)")
        pthread_detach(thread)
    }
}
