import CLibUV

/// Splits a byte stream, fed in chunks of any size, into `\n`-terminated lines.
///
/// Each complete line is handed to the caller's closure without its `\n` and without one `\r`
/// just before it. A line that lies wholly inside the chunk being consumed is passed as a
/// pointer straight into that chunk: no allocation and no copy. Only the start of a line cut
/// by the end of a chunk is copied, into the framer's own partial-line buffer, and the line is
/// passed from there once its `\n` arrives.
///
/// A line longer than `maxLineLength` bytes (counted before the `\n`, a `\r` included) is
/// never buffered whole: once it is known to be too long its bytes are only counted, and when
/// its `\n` arrives the closure gets `.tooLong` with the line's full length. The partial-line
/// buffer therefore never exceeds `maxLineLength` bytes; one above 64 KiB is freed once the
/// line it held is done, so one long line does not pin it. Bytes after the last `\n` are an
/// unfinished line: they are held (or counted) until more input comes, and are never
/// delivered by themselves.
///
/// Ownership and lifetime: the framer owns its partial-line buffer, allocated on demand and
/// freed by `reset()` or when the framer is destroyed (it is noncopyable, so exactly one
/// owner frees it). A `.line` pointer is valid only during the closure call that receives it:
/// it points into the chunk or into the partial-line buffer, which the next call may reuse.
///
/// Thread rules: not thread-safe; one thread at a time (a connection's loop thread). The
/// closure must not use the framer it is called from (it is being mutated); it may do
/// anything else, and ends the framing of the current chunk by returning false.
public struct LineFramer: ~Copyable {
    /// What the framer found: a line, or the length of a line too long to keep.
    public enum Piece {
        /// A complete line without its `\n` (and without a `\r` right before it). Valid only
        /// during the call.
        case line(UnsafeRawBufferPointer)
        /// A line longer than `maxLineLength` was thrown away; its length before the `\n`.
        case tooLong(Int)
    }

    /// The longest line delivered, in bytes before the `\n` (a `\r` counts).
    public let maxLineLength: Int

    /// Partial-line buffers larger than this are freed once their line is done.
    public static let retainedBufferLimit = 64 * 1024

    private var partial: UnsafeMutableRawPointer?
    private var partialCapacity = 0
    /// The unfinished line's length so far. Up to `maxLineLength`, its bytes are held in
    /// `partial`; beyond, the line is being thrown away and its bytes are only counted. One
    /// field, so a line with nothing before it costs one test.
    private var unfinished = 0

    /// A framer with no buffer yet (nothing is allocated until a line is cut by a chunk end).
    public init(maxLineLength: Int) {
        precondition(maxLineLength > 0)
        self.maxLineLength = maxLineLength
    }

    deinit {
        partial?.deallocate()
    }

    /// The length of the unfinished line: bytes consumed since the last `\n`.
    public var unfinishedLineLength: Int { unfinished }

    /// The partial-line buffer's current size in bytes (0 when none is allocated).
    public var bufferCapacity: Int { partialCapacity }

    /// Frames `bytes`, calling `body` for each line completed in them, in order.
    ///
    /// Returns how many bytes were consumed: all of them, unless `body` returned false, in
    /// which case framing stopped right after the `\n` of the line (or too-long report) just
    /// passed; the framer is then at a line boundary and the rest of `bytes` may be consumed
    /// later (or dropped).
    @discardableResult
    @inline(__always)
    public mutating func consume(_ bytes: UnsafeRawBufferPointer, _ body: (Piece) -> Bool) -> Int {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        let limit = maxLineLength
        var start = base.assumingMemoryBound(to: UInt8.self)
        var remaining = bytes.count
        while remaining > 0 {
            guard let newline = runnel_find_newline(start, remaining) else {
                hold(UnsafeRawBufferPointer(start: start, count: remaining))
                remaining = 0
                break
            }
            let length = newline - start
            let carried = unfinished
            let more: Bool
            if carried == 0 {
                // The common case: the line lies wholly in `bytes`.
                if length > limit {
                    more = body(.tooLong(length))
                } else {
                    more = body(.line(Self.trimmed(UnsafeRawPointer(start), length)))
                }
            } else {
                unfinished = 0
                let total = carried + length
                if total > limit {
                    // Already being thrown away (`carried > limit`), or too long only now.
                    shrink()
                    more = body(.tooLong(total))
                } else {
                    reserve(total, keeping: carried)
                    let line = partial!
                    (line + carried).copyMemory(from: start, byteCount: length)
                    more = body(.line(Self.trimmed(UnsafeRawPointer(line), total)))
                    shrink()
                }
            }
            start = newline + 1
            remaining -= length + 1
            if !more { break }
        }
        return bytes.count - remaining
    }

    /// Consumes `bytes` but drops the lines completed in them, reporting nothing; the end
    /// after their last `\n` is kept as usual, so later input is framed from a line boundary.
    public mutating func skipLines(_ bytes: UnsafeRawBufferPointer) {
        guard let last = bytes.lastIndex(of: 10) else {
            hold(bytes)
            return
        }
        unfinished = 0
        shrink()
        hold(UnsafeRawBufferPointer(rebasing: bytes[(last + 1)...]))
    }

    /// Forgets the unfinished line and frees the partial-line buffer.
    public mutating func reset() {
        partial?.deallocate()
        partial = nil
        partialCapacity = 0
        unfinished = 0
    }

    /// The line without one trailing `\r`.
    @inline(__always)
    private static func trimmed(_ start: UnsafeRawPointer, _ length: Int) -> UnsafeRawBufferPointer {
        var length = length
        if length > 0 && start.load(fromByteOffset: length - 1, as: UInt8.self) == 13 { length -= 1 }
        return UnsafeRawBufferPointer(start: start, count: length)
    }

    /// Keeps the unfinished end of a chunk, or counts it when the line is already too long.
    private mutating func hold(_ bytes: UnsafeRawBufferPointer) {
        // A chunk that ends on a newline leaves nothing to hold, and no buffer may exist yet.
        guard !bytes.isEmpty else { return }
        let total = unfinished + bytes.count
        if total > maxLineLength {
            // Too long: from now on only counted; the buffer is not needed.
            if unfinished <= maxLineLength { shrink() }
        } else {
            reserve(total, keeping: unfinished)
            (partial! + unfinished).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        unfinished = total
    }

    /// Makes room for `count` bytes, keeping the first `kept` bytes held.
    private mutating func reserve(_ count: Int, keeping kept: Int) {
        guard count > partialCapacity else { return }
        let capacity = min(max(count, partialCapacity * 2, 256), maxLineLength)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        if let partial {
            grown.copyMemory(from: partial, byteCount: kept)
            partial.deallocate()
        }
        partial = grown
        partialCapacity = capacity
    }

    /// Lets go of a big partial buffer once it is not needed.
    private mutating func shrink() {
        guard partialCapacity > Self.retainedBufferLimit, let partial else { return }
        partial.deallocate()
        self.partial = nil
        partialCapacity = 0
    }
}
