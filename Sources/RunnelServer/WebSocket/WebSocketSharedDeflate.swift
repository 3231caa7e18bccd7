#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Compression shared by every WebSocket whose client agreed `server_no_context_takeover`,
/// where each message stands alone: one deflater per window size for their lines, and a
/// delivery's value compressed once for all its subscribers.
///
/// A `next` line is three pieces, of which only the middle one, the value, is the same for
/// every subscriber. Its message is built as deflate blocks (RFC 1951) put end to end: the
/// line's head as a stored block, the value as a deflate stream of its own ended by a sync
/// flush (so it ends on a byte boundary with an empty stored block and refers to nothing
/// before it), the tail as a stored block, and the header byte of the empty stored block whose
/// `00 00 ff ff` RFC 7692's receiver adds back. The value's part is kept with a copy of the
/// value, so the next subscriber of the same delivery finds it by comparing bytes (never by
/// address, which a freed value's successor may reuse): one compression a delivery, not one
/// a subscriber, at the price of 11 bytes a message for the uncompressed head and tail.
///
/// Thread rules: not thread-safe; the loop thread that runs the sessions (one per front
/// door). Lifetime rule: owned by the front door; what it returns is valid until its next
/// call.
final class WebSocketSharedDeflate {
    /// Non-takeover deflaters by window bits (9 to 15), made when first asked for.
    private var deflaters: [WebSocketDeflater?] = Array(repeating: nil, count: 16)
    /// The last value compressed, its window bits, and its compressed part.
    private let lastValue = WebSocketPayloadBuffer()
    private var lastWindowBits = 0
    private let lastCompressed = WebSocketPayloadBuffer()
    /// The message being put together.
    private let message = WebSocketPayloadBuffer()

    /// The deflater for whole messages with a window of `windowBits`, without context takeover.
    func deflater(windowBits: Int) -> WebSocketDeflater {
        if let deflater = deflaters[windowBits] { return deflater }
        let deflater = WebSocketDeflater(windowBits: windowBits, takesOverContext: false)
        deflaters[windowBits] = deflater
        return deflater
    }

    /// The compressed message of `head`, `value` and `tail`, the value's part compressed once
    /// for every subscriber of a delivery.
    func compressNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer, windowBits: Int
    ) -> UnsafeRawBufferPointer {
        if windowBits != lastWindowBits || !isLastValue(value) {
            lastWindowBits = windowBits
            lastValue.removeAll()
            lastValue.append(room: value.count) { space in
                space.copyMemory(from: value)
                return value.count
            }
            lastCompressed.removeAll()
            // The deflater's message without its tail: put the flush's empty stored block back.
            let compressed = deflater(windowBits: windowBits).compress(value)
            Self.append(compressed, to: lastCompressed)
            Self.emptyStoredBlock.withUnsafeBytes { Self.append($0, to: lastCompressed) }
        }
        message.removeAll()
        Self.appendStored(head, to: message)
        Self.append(lastCompressed.bytes, to: message)
        Self.appendStored(tail, to: message)
        // The header of the last, empty stored block; the receiver adds its 00 00 ff ff.
        Self.storedHeader.withUnsafeBytes { Self.append($0, to: message) }
        return message.bytes
    }

    private func isLastValue(_ value: UnsafeRawBufferPointer) -> Bool {
        let last = lastValue.bytes
        guard value.count == last.count else { return false }
        return value.isEmpty || memcmp(value.baseAddress!, last.baseAddress!, value.count) == 0
    }

    /// The empty stored block a sync flush ends with, which the deflater takes off.
    private static let emptyStoredBlock: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
    /// The header byte of a stored block, not final, from a byte boundary.
    private static let storedHeader: [UInt8] = [0x00]

    /// Stored blocks, not final, of `bytes` (65535 bytes a block), from a byte boundary.
    private static func appendStored(_ bytes: UnsafeRawBufferPointer, to buffer: WebSocketPayloadBuffer) {
        var start = 0
        repeat {
            let count = min(bytes.count - start, 0xFFFF)
            let length = UInt16(count)
            buffer.append(room: 5 + count) { space in
                space[0] = 0
                space[1] = UInt8(truncatingIfNeeded: length)
                space[2] = UInt8(truncatingIfNeeded: length >> 8)
                space[3] = UInt8(truncatingIfNeeded: ~length)
                space[4] = UInt8(truncatingIfNeeded: ~length >> 8)
                UnsafeMutableRawBufferPointer(rebasing: space[5..<(5 + count)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)]))
                return 5 + count
            }
            start += count
        } while start < bytes.count
    }

    private static func append(_ bytes: UnsafeRawBufferPointer, to buffer: WebSocketPayloadBuffer) {
        buffer.append(room: bytes.count) { space in
            space.copyMemory(from: bytes)
            return bytes.count
        }
    }
}
