#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A mutex backed by `pthread_mutex_t`.
///
/// `Synchronization.Mutex` makes the thread sanitizer report false races on Linux (it cannot see
/// futexes), so the library uses this small type instead. The mutex lives in memory allocated
/// once and never moved, as pthreads requires. Pass `recursive: true` for a lock that the
/// owning thread may take again (ReactiveCocoa's `@synchronized` is recursive, and subscribers
/// may send re-entrantly).
public final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(recursive: Bool = false) {
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        if recursive {
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        }
        let status = pthread_mutex_init(mutex, &attributes)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inlinable
    public func lock() { pthread_mutex_lock(mutexPointer) }

    @inlinable
    public func unlock() { pthread_mutex_unlock(mutexPointer) }

    @usableFromInline
    var mutexPointer: UnsafeMutablePointer<pthread_mutex_t> { mutex }

    /// Runs `body` holding the lock.
    @inlinable
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A value guarded by a `Lock`: the only way to reach it is `withLock`.
public final class Locked<State>: @unchecked Sendable {
    @usableFromInline let lock: Lock
    @usableFromInline var state: State

    public init(_ state: State, recursive: Bool = false) {
        self.state = state
        self.lock = Lock(recursive: recursive)
    }

    @inlinable
    public func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}

/// A condition variable for a thread that waits, holding a `Lock`, for another to change what
/// the lock guards (a `pthread_cond_t`; its timed waits are on `CLOCK_MONOTONIC` where the
/// platform allows, so a change of the wall clock does not move them).
public final class LockCondition: @unchecked Sendable {
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        condition = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if !canImport(Darwin)
            pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        let status = pthread_cond_init(condition, &attributes)
        precondition(status == 0, "pthread_cond_init failed: \(status)")
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Releases `lock`, which the caller holds, until signalled (or woken spuriously: check
    /// the condition again), and takes it back.
    public func wait(holding lock: Lock) { pthread_cond_wait(condition, lock.mutexPointer) }

    /// The same, waking at `deadline` (`CLOCK_MONOTONIC` nanoseconds) at the latest.
    public func wait(holding lock: Lock, until deadline: UInt64) {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        _ = pthread_cond_timedwait(condition, lock.mutexPointer, &time)
    }

    /// Wakes one waiting thread, if any.
    public func signal() { pthread_cond_signal(condition) }
}
