/// Bytes received but not yet handed out, cut into lines at `\n` (a trailing `\r` is removed).
///
/// Not thread-safe: owned by one `TestClient`. Consumed bytes are compacted away in bulk so that
/// reading megabytes line by line stays linear.
struct LineBuffer {
    private var bytes: [UInt8] = []
    private var start = 0

    var isEmpty: Bool { start == bytes.count }

    /// Bytes of a line that has begun but not yet ended.
    var pendingCount: Int { bytes.count - start }

    mutating func append(_ chunk: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: chunk)
    }

    /// The next complete line without its terminator, or nil when no `\n` is buffered.
    mutating func nextLine() -> String? {
        guard let newline = bytes[start...].firstIndex(of: 0x0A) else { return nil }
        var end = newline
        if end > start && bytes[end - 1] == 0x0D { end -= 1 }
        let line = String(decoding: bytes[start..<end], as: UTF8.self)
        start = newline + 1
        if start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 65_536 && start * 2 > bytes.count {
            bytes.removeFirst(start)
            start = 0
        }
        return line
    }
}
