import CZlib

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A delivered value compressed once for every compressed stream it goes to that keeps no
/// context from one message to the next (WebSockets with `server_no_context_takeover`, gzip'd
/// event streams): deflate blocks that stand alone, refer to nothing before them and end on a
/// byte boundary (a sync flush), so each stream can put its own bytes around them as stored
/// blocks (`StoredBlocks`). The last value is kept with a copy of its bytes, so the next
/// subscriber of the same delivery finds it by comparing bytes (never by address, which a freed
/// value's successor may reuse): one compression a delivery, not one a subscriber. Also kept:
/// the value's CRC-32 and zlib's operator for combining a CRC with it, which a gzip stream's
/// trailer needs (`GzipEventStream`) without reading the value again.
///
/// Thread rules: not thread-safe; the loop thread that runs the sessions (one per front door).
/// Lifetime rule: owned by the front door; what it returns is valid until its next call.
package final class SharedValueDeflate {
    /// The blocks of the last value compressed, ended by a sync flush.
    package struct Blocks {
        package let bytes: UnsafeRawBufferPointer
        /// The value's CRC-32, its length and `crc32_combine_gen(length)`.
        package let crc: UInt32
        package let length: Int
        package let combineOperator: UInt
    }

    /// Non-takeover deflaters by window bits (9 to 15), made when first asked for.
    private var deflaters: [Deflater?] = Array(repeating: nil, count: 16)
    private let lastValue = GrowableBuffer()
    private var lastWindowBits = 0
    private let lastCompressed = GrowableBuffer()
    private var lastCRC: UInt32 = 0
    private var lastCombineOperator: UInt = 0

    package init() {}

    /// The deflater for whole messages with a window of `windowBits`, without context takeover.
    package func deflater(windowBits: Int) -> Deflater {
        if let deflater = deflaters[windowBits] { return deflater }
        let deflater = Deflater(windowBits: windowBits, takesOverContext: false)
        deflaters[windowBits] = deflater
        return deflater
    }

    /// `value`'s blocks with a window of `windowBits`, compressed at the first call for it.
    package func blocks(of value: UnsafeRawBufferPointer, windowBits: Int) -> Blocks {
        if windowBits != lastWindowBits || !isLastValue(value) {
            lastWindowBits = windowBits
            lastValue.removeAll()
            lastValue.append(value)
            lastCompressed.removeAll()
            lastCompressed.append(deflater(windowBits: windowBits).compressFlushed(value))
            lastCRC = Self.crc(of: value)
            lastCombineOperator = crc32_combine_gen(off_t(value.count))
        }
        return Blocks(
            bytes: lastCompressed.bytes, crc: lastCRC, length: lastValue.count, combineOperator: lastCombineOperator)
    }

    /// The CRC-32 of `bytes` continued from `crc` (0 to start).
    package static func crc(of bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return crc }
        return UInt32(
            truncatingIfNeeded: crc32(UInt(crc), base.assumingMemoryBound(to: Bytef.self), UInt32(bytes.count)))
    }

    private func isLastValue(_ value: UnsafeRawBufferPointer) -> Bool {
        let last = lastValue.bytes
        guard value.count == last.count else { return false }
        return value.isEmpty || memcmp(value.baseAddress!, last.baseAddress!, value.count) == 0
    }
}
