import CLibUV

#if canImport(Glibc)
    import Glibc
#endif

/// glibc's malloc, set for runneld's allocations: allocations up to 1 MiB come from the heap
/// (not an `mmap` each), and up to 8 MiB free at the top of a heap is kept rather than given
/// back to the kernel at once. A loop's turn makes and frees hundreds of kilobytes at a time
/// (write chunks, a batch of values for another loop, a run of `pub`s); with glibc's own
/// thresholds (128 KiB to start with) a loop thread's heap gave those pages back and faulted
/// them in again turn after turn (bench/README.md, "The third pass"). What is kept
/// is bounded: 8 MiB a heap. Left as glibc has it when `GLIBC_TUNABLES` sets any of malloc's
/// own, so an operator's choice wins.
///
/// Thread rules: `apply` once, on the main thread, before other threads start.
public enum MallocSettings {
    static let mmapThreshold: Int32 = 1 << 20
    static let trimThreshold: Int32 = 8 << 20

    /// Sets them, unless `GLIBC_TUNABLES` names one of malloc's. Call it first thing, once.
    public static func apply() {
        if let tunables = getenv("GLIBC_TUNABLES"), String(cString: tunables).contains("glibc.malloc.") { return }
        _ = mallopt(M_MMAP_THRESHOLD, mmapThreshold)
        _ = mallopt(M_TRIM_THRESHOLD, trimThreshold)
    }
}
