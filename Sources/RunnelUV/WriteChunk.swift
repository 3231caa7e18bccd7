/// A fixed block of memory that small copying writes are appended to, so many small writes
/// leave in one `uv_buf_t`.
///
/// Thread rules: used on the loop thread only. Lifetime rule: the bytes stay put until the
/// chunk is deinitialised; every write request whose buffers point into the chunk holds a
/// reference to it until libuv's write callback.
final class WriteChunk {
    let base: UnsafeMutableRawPointer
    let capacity: Int
    /// The two counters, behind a pointer so the per-write updates skip Swift's run-time
    /// exclusivity checks (see `TCPConnection.HotState`).
    private let counters: UnsafeMutablePointer<Int>

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(byteCount: capacity, alignment: 16)
        counters = .allocate(capacity: 2)
        counters.initialize(repeating: 0, count: 2)
    }

    deinit {
        base.deallocate()
        counters.deallocate()
    }

    /// Bytes written into the chunk.
    var used: Int {
        get { counters[0] }
        set { counters[0] = newValue }
    }

    /// Bytes already handed to a write request (or queued as a segment); `sealed..<used` is
    /// the run still open for appending.
    var sealed: Int {
        get { counters[1] }
        set { counters[1] = newValue }
    }

    var available: Int { capacity - used }

    /// Copies as much of `bytes` as fits; returns how many bytes were copied.
    func append(_ bytes: UnsafeRawBufferPointer) -> Int {
        let count = min(bytes.count, available)
        if count > 0 { (base + used).copyMemory(from: bytes.baseAddress!, byteCount: count) }
        used += count
        return count
    }
}
