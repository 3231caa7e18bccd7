import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A tiny lock for very short critical sections in objects made by the thousand (one per
/// subscription): unlike `Lock` it needs no separate allocation of a pthread mutex.
///
/// It spins on an atomic flag and yields the processor while taken, so it is only for
/// sections that do a few memory operations and never call out (no user code, no other
/// lock). The thread sanitizer understands it: it is made of atomics.
struct SpinLock: ~Copyable {
    private let taken = Atomic<Bool>(false)

    init() {}

    func lock() {
        while !taken.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            sched_yield()
        }
    }

    func unlock() { taken.store(false, ordering: .releasing) }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
