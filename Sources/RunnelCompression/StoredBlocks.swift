/// Deflate's stored blocks (RFC 1951, 3.2.4): bytes sent as they are inside a deflate stream,
/// five bytes of header a block of up to 65,535. The shared compression puts a subscriber's own
/// bytes (a line's head and tail, an event's fields) around a value compressed once for all
/// subscribers this way, and ends streams with them. Every block here starts on a byte
/// boundary, which the blocks before it (a sync flush's output, or other stored blocks) leave.
///
/// Thread rules: pure functions, safe from any thread. Lifetime rule: holds nothing.
package enum StoredBlocks {
    /// The empty stored block, not final, a sync flush ends with: `00 00 00 ff ff`, whose last
    /// four bytes RFC 7692's sender takes off and its receiver adds back.
    package static let syncMarker: [UInt8] = [0x00, 0x00, 0x00, 0xFF, 0xFF]
    /// The empty final stored block, which ends a deflate stream.
    package static let end: [UInt8] = [0x01, 0x00, 0x00, 0xFF, 0xFF]

    /// Appends `bytes` as stored blocks, not final (none when `bytes` is empty).
    package static func append(_ bytes: UnsafeRawBufferPointer, to buffer: GrowableBuffer) {
        var start = 0
        while start < bytes.count {
            let count = min(bytes.count - start, 0xFFFF)
            buffer.append(room: 5 + count) { space in
                writeHeader(length: count, into: space)
                UnsafeMutableRawBufferPointer(rebasing: space[5..<(5 + count)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)]))
                return 5 + count
            }
            start += count
        }
    }

    /// The five bytes before a stored block's `length` bytes (at most 65,535): not final, type
    /// 00, then LEN and its complement NLEN, little-endian.
    package static func writeHeader(length: Int, into space: UnsafeMutableRawBufferPointer) {
        precondition(length <= 0xFFFF, "a stored block holds at most 65,535 bytes")
        let length = UInt16(length)
        space[0] = 0
        space[1] = UInt8(truncatingIfNeeded: length)
        space[2] = UInt8(truncatingIfNeeded: length >> 8)
        space[3] = UInt8(truncatingIfNeeded: ~length)
        space[4] = UInt8(truncatingIfNeeded: ~length >> 8)
    }
}
