import RunnelCompression

/// The `next` lines of every WebSocket whose client agreed `server_no_context_takeover`, where
/// each message stands alone: the value compressed once for all its subscribers
/// (`SharedValueDeflate`, whose deflaters compress such a WebSocket's other messages whole).
///
/// A `next` line is three pieces, of which only the middle one, the value, is the same for
/// every subscriber. Its message is deflate blocks (RFC 1951) put end to end: the line's head
/// as a stored block, the value's shared blocks, the tail as a stored block, and the empty
/// stored block whose `00 00 ff ff` RFC 7692's sender takes off: 11 bytes a message more than
/// compressing the line whole, for one compression a delivery rather than one a subscriber.
///
/// Thread rules: not thread-safe; the loop thread that runs the sessions (one per front
/// door). Lifetime rule: owned by the front door; what it returns is valid until its next
/// call.
package final class WebSocketSharedDeflate {
    private let values: SharedValueDeflate
    /// The message being put together.
    private let message = GrowableBuffer()

    package init(values: SharedValueDeflate) { self.values = values }

    /// The compressed message of `head`, `value` and `tail`, ended by a sync flush, the
    /// value's part compressed once for every subscriber of a delivery.
    package func compressNext(
        head: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer, windowBits: Int
    ) -> UnsafeRawBufferPointer {
        let blocks = values.blocks(of: value, windowBits: windowBits)
        message.removeAll()
        StoredBlocks.append(head, to: message)
        message.append(blocks.bytes)
        StoredBlocks.append(tail, to: message)
        StoredBlocks.syncMarker.withUnsafeBytes { message.append($0) }
        return message.bytes
    }
}
