import CZlib

/// Compresses the server's messages for one direction of permessage-deflate (RFC 7692,
/// 7.2.1): raw deflate with zlib, the message's pieces in order, a sync flush, and the
/// flush's `00 00 ff ff` taken off. With context takeover the window carries over from one
/// message to the next (the client's inflater keeps it too); without, the stream is reset
/// after each message, so a message stands alone and can be shared (`WebSocketSharedDeflate`).
///
/// Memory: zlib's stream takes 2^(bits+2) bytes for the window and 2^(memoryLevel+9) for
/// its hash and pending output, about 6 KiB more: 262 KiB at 15 bits and level 8, 70 KiB at
/// 13 bits and level 6 (what a connection's own deflater uses, `perConnection`), made at the
/// first message.
///
/// Thread rules: not thread-safe; one owner (a connection's transport, or the front door's
/// shared compression, on the loop thread). Lifetime rule: owns its zlib stream and its
/// output buffer, freed in `deinit`.
final class WebSocketDeflater {
    private let windowBits: Int
    private let memoryLevel: Int
    private let takesOverContext: Bool
    private var stream: UnsafeMutablePointer<z_stream>?
    /// The last message compressed; valid until the next call.
    private let output = WebSocketPayloadBuffer()

    /// A connection's own deflater, with context takeover, for a client that allows a window of
    /// `maxWindowBits`: its window is at most 8 KiB (13 bits), which keeps most of the gain on
    /// a stream of similar JSON lines at a quarter of the memory (a server may always use a
    /// smaller window than agreed, RFC 7692 7.1.2.1).
    static func perConnection(maxWindowBits: Int) -> WebSocketDeflater {
        WebSocketDeflater(windowBits: min(maxWindowBits, 13), memoryLevel: 6, takesOverContext: true)
    }

    init(windowBits: Int, memoryLevel: Int = 8, takesOverContext: Bool) {
        self.windowBits = windowBits
        self.memoryLevel = memoryLevel
        self.takesOverContext = takesOverContext
    }

    deinit {
        guard let stream else { return }
        deflateEnd(stream)
        stream.deallocate()
    }

    /// The compressed form of the message made of `pieces`, valid until the next call.
    func compress(_ pieces: UnsafeRawBufferPointer...) -> UnsafeRawBufferPointer {
        let stream = openStream()
        output.removeAll()
        let total = pieces.reduce(0) { $0 + $1.count }
        // Room for everything in one pass, as a rule; the loop below makes more if not.
        let bound = Int(deflateBound(stream, UInt(total))) + 16
        for (index, piece) in pieces.enumerated() {
            let flush = index == pieces.count - 1 ? Z_SYNC_FLUSH : Z_NO_FLUSH
            stream.pointee.next_in = piece.baseAddress.map {
                UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: Bytef.self))
            }
            stream.pointee.avail_in = UInt32(piece.count)
            repeat {
                output.append(room: max(bound - output.count, 64)) { space in
                    stream.pointee.next_out = space.baseAddress!.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = UInt32(space.count)
                    let result = deflate(stream, flush)
                    precondition(result == Z_OK || result == Z_BUF_ERROR, "zlib's deflate failed: \(result)")
                    return space.count - Int(stream.pointee.avail_out)
                }
            } while stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0
        }
        // A sync flush ends with an empty stored block, 00 00 ff ff: the receiver adds it back.
        output.removeLast(4)
        if !takesOverContext { deflateReset(stream) }
        return output.bytes
    }

    private func openStream() -> UnsafeMutablePointer<z_stream> {
        if let stream { return stream }
        let made = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        made.initialize(to: z_stream())
        let result = runnel_deflate_init(made, Z_DEFAULT_COMPRESSION, Int32(windowBits), Int32(memoryLevel))
        precondition(result == Z_OK, "zlib's deflateInit2 failed: \(result)")
        stream = made
        return made
    }
}
