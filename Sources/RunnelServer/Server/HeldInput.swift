#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The input a session holds while its connection's output is over the soft limit, or its
/// publishing is paused (`backpressure`): the held lines back to back, each followed by its `\n` (so it costs what it took to send), and
/// where in them a line over `max_line_bytes` still has to be answered (such a line took more
/// than `max_line_bytes` to send, so there are few).
///
/// Thread rules: loop thread only. Lifetime rule: a value its session owns.
struct HeldInput {
    enum Item {
        /// A request line, as a range of `bytes`.
        case line(Range<Int>)
        /// A line over `max_line_bytes`, discarded as it arrived, still to be answered.
        case longLine(Int)
    }

    private(set) var bytes: [UInt8] = []
    /// Long lines: the offset in `bytes` they came at, and their length.
    private var longLines: [(offset: Int, byteCount: Int)] = []
    /// The offset in `bytes` and the index in `longLines` of the next item.
    private var cursor = 0
    private var nextLongLine = 0
    /// Reading is stopped and a wake-up is registered (with the connection, or the publisher
    /// gate).
    var isWaiting = false

    /// Whether input is being held: new lines must queue behind what is held.
    var isActive: Bool { isWaiting || cursor < bytes.count || nextLongLine < longLines.count }

    /// The next item to handle.
    var first: Item? {
        if nextLongLine < longLines.count && longLines[nextLongLine].offset == cursor {
            return .longLine(longLines[nextLongLine].byteCount)
        }
        guard cursor < bytes.count else { return nil }
        // Every held line ends in `\n` (`append(line:)`), found with `memchr` (vectorised; a
        // search byte by byte costs more than handling a long line).
        let end = bytes.withUnsafeBytes { held in
            let start = held.baseAddress! + cursor
            return cursor + start.distance(to: UnsafeRawPointer(memchr(start, 0x0A, held.count - cursor)!))
        }
        return .line(cursor..<end)
    }

    /// Moves past `item`, which `first` returned.
    mutating func remove(_ item: Item) {
        switch item {
        case .line(let range): cursor = range.upperBound + 1
        case .longLine: nextLongLine += 1
        }
    }

    mutating func append(line: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: line)
        bytes.append(10)
    }

    mutating func append(longLine byteCount: Int) { longLines.append((bytes.count, byteCount)) }

    /// Forgets everything held, giving the memory back.
    mutating func reset() {
        bytes = []
        longLines = []
        cursor = 0
        nextLongLine = 0
    }
}
