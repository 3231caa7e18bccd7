import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A recursive lock made of atomics, for objects made once per subscription whose lock is
/// almost never contended: a block subscriber takes it around every block it runs, but its
/// events already come one at a time, so another thread only waits when the subscriber is
/// shared by signals on several threads or disposed from another thread while a block runs.
///
/// Unlike `Lock` it needs no pthread mutex to be allocated and initialised, and taking it
/// uncontended is one compare-and-swap. A waiting thread yields the processor until the lock
/// is free; the owning thread may take it again (blocks may send re-entrantly). The thread
/// sanitizer understands it: it is made of atomics.
struct RecursiveSpinLock: ~Copyable {
    /// The owning thread's identity, or 0 when free.
    private let owner = Atomic<UInt>(0)
    /// How many times the owner holds it; touched only by the owner.
    private let depth = Atomic<Int>(0)

    init() {}

    @inline(__always)
    private static var currentThread: UInt {
        #if canImport(Glibc)
            UInt(pthread_self())
        #else
            UInt(bitPattern: pthread_self())
        #endif
    }

    func lock() {
        let me = Self.currentThread
        // Only this thread ever stores `me`, so reading it back means this thread holds it.
        if owner.load(ordering: .relaxed) == me {
            depth.store(depth.load(ordering: .relaxed) + 1, ordering: .relaxed)
            return
        }
        while !owner.compareExchange(expected: 0, desired: me, ordering: .acquiring).exchanged {
            sched_yield()
        }
        depth.store(1, ordering: .relaxed)
    }

    func unlock() {
        let remaining = depth.load(ordering: .relaxed) - 1
        depth.store(remaining, ordering: .relaxed)
        if remaining == 0 { owner.store(0, ordering: .releasing) }
    }
}
