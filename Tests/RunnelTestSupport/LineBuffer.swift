/// Bytes received but not yet handed out, taken as lines cut at `\n` (a trailing `\r` is
/// removed) or as a number of bytes.
///
/// A value with one owner, not shared between threads. Consumed bytes are compacted away in
/// bulk so that reading megabytes line by line stays linear.
public struct LineBuffer {
    private var bytes: [UInt8] = []
    private var start = 0

    public init() {}

    /// How many bytes are buffered, including a line that has begun but not yet ended.
    public var count: Int { bytes.count - start }

    public mutating func append(_ chunk: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: chunk)
    }

    /// The next complete line without its terminator, or nil when no `\n` is buffered.
    public mutating func nextLine() -> String? {
        guard let newline = bytes[start...].firstIndex(of: 0x0A) else { return nil }
        var end = newline
        if end > start && bytes[end - 1] == 0x0D { end -= 1 }
        let line = String(decoding: bytes[start..<end], as: UTF8.self)
        consume(upTo: newline + 1)
        return line
    }

    /// Removes and returns the first `count` bytes, line ends included; `count` must not be
    /// more than are buffered.
    public mutating func removeBytes(_ count: Int) -> [UInt8] {
        let taken = Array(bytes[start..<start + count])
        consume(upTo: start + count)
        return taken
    }

    private mutating func consume(upTo end: Int) {
        start = end
        if start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 65_536 && start * 2 > bytes.count {
            bytes.removeFirst(start)
            start = 0
        }
    }
}
