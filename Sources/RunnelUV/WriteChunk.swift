/// A fixed block of memory that small copying writes are appended to, so many small writes
/// leave in one `uv_buf_t`.
///
/// Thread rules: used on the loop thread only. Lifetime rule: the bytes stay put until the
/// chunk is deinitialised; every write request whose buffers point into the chunk holds a
/// reference to it until libuv's write callback.
final class WriteChunk {
    let base: UnsafeMutableRawPointer
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    // Updated per write: unchecked like `TCPConnection`'s per-delivery state.
    /// Bytes written into the chunk.
    @exclusivity(unchecked) var used = 0
    /// Bytes already handed to a write request (or queued as a segment); `sealed..<used` is
    /// the run still open for appending.
    @exclusivity(unchecked) var sealed = 0

    var available: Int { capacity - used }

    /// Copies as much of `bytes` as fits; returns how many bytes were copied.
    func append(_ bytes: UnsafeRawBufferPointer) -> Int {
        let count = min(bytes.count, available)
        if count > 0 { (base + used).copyMemory(from: bytes.baseAddress!, byteCount: count) }
        used += count
        return count
    }
}
