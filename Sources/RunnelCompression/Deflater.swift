import CZlib

/// Raw deflate (RFC 1951) with zlib, for every compressed output of the server: WebSocket
/// messages (RFC 7692, 7.2.1), gzip bodies and event streams (`GzipBody`, `GzipEventStream`).
/// `compressFlushed` ends its pieces with a sync flush, so they end on a byte boundary with the
/// empty stored block `00 00 ff ff` (which RFC 7692's sender takes off) and more blocks may
/// follow; `compressWhole` ends a stream with its final block. With context takeover the
/// window carries over from one call to the next (the peer's inflater keeps it too); without,
/// the stream is reset after each call, so its output stands alone and can be shared
/// (`SharedValueDeflate`).
///
/// Memory: zlib's stream takes 2^(bits+2) bytes for the window and 2^(memoryLevel+9) for
/// its hash and pending output, about 6 KiB more: 262 KiB at 15 bits and level 8, 70 KiB at
/// 13 bits and level 6 (what a WebSocket's own deflater uses, `perConnection`), made at the
/// first call and counted by `ZlibMemory`.
///
/// Thread rules: not thread-safe; one owner (a connection's transport, or the front door's
/// shared compression, on the loop thread). Lifetime rule: owns its zlib stream and its
/// output buffer, freed in `deinit`.
package final class Deflater {
    private let windowBits: Int
    private let memoryLevel: Int
    private let takesOverContext: Bool
    private var stream: UnsafeMutablePointer<z_stream>?
    /// The last output; valid until the next call.
    private let output = GrowableBuffer()

    /// A WebSocket's own deflater, with context takeover, for a client that allows a window of
    /// `maxWindowBits`: its window is at most 8 KiB (13 bits), which keeps most of the gain on
    /// a stream of similar JSON lines at a quarter of the memory (a server may always use a
    /// smaller window than agreed, RFC 7692 7.1.2.1).
    package static func perConnection(maxWindowBits: Int) -> Deflater {
        Deflater(windowBits: min(maxWindowBits, 13), memoryLevel: 6, takesOverContext: true)
    }

    package init(windowBits: Int, memoryLevel: Int = 8, takesOverContext: Bool) {
        self.windowBits = windowBits
        self.memoryLevel = memoryLevel
        self.takesOverContext = takesOverContext
    }

    deinit {
        guard let stream else { return }
        deflateEnd(stream)
        stream.deallocate()
    }

    /// The blocks of `pieces`, in order, ended by a sync flush: valid until the next call.
    package func compressFlushed(_ pieces: UnsafeRawBufferPointer...) -> UnsafeRawBufferPointer {
        compress(pieces, flush: Z_SYNC_FLUSH)
    }

    /// `bytes` as a whole deflate stream, its last block final: valid until the next call.
    package func compressWhole(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        compress([bytes], flush: Z_FINISH)
    }

    private func compress(_ pieces: [UnsafeRawBufferPointer], flush lastFlush: Int32) -> UnsafeRawBufferPointer {
        let stream = openStream()
        output.removeAll()
        let total = pieces.reduce(0) { $0 + $1.count }
        // Room for everything in one pass, as a rule; the loop below makes more if not.
        let bound = Int(deflateBound(stream, UInt(total))) + 16
        for (index, piece) in pieces.enumerated() {
            let flush = index == pieces.count - 1 ? lastFlush : Z_NO_FLUSH
            stream.pointee.next_in = piece.baseAddress.map {
                UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: Bytef.self))
            }
            stream.pointee.avail_in = UInt32(piece.count)
            var result = Z_OK
            repeat {
                output.append(room: max(bound - output.count, 64)) { space in
                    stream.pointee.next_out = space.baseAddress!.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = UInt32(space.count)
                    result = deflate(stream, flush)
                    precondition(
                        result == Z_OK || result == Z_BUF_ERROR || result == Z_STREAM_END,
                        "zlib's deflate failed: \(result)")
                    return space.count - Int(stream.pointee.avail_out)
                }
            } while stream.pointee.avail_in > 0 || (stream.pointee.avail_out == 0 && result != Z_STREAM_END)
                || (flush == Z_FINISH && result != Z_STREAM_END)
        }
        if !takesOverContext || lastFlush == Z_FINISH { deflateReset(stream) }
        return output.bytes
    }

    private func openStream() -> UnsafeMutablePointer<z_stream> {
        if let stream { return stream }
        let made = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        made.initialize(to: z_stream())
        ZlibMemory.track(made)
        let result = runnel_deflate_init(made, Z_DEFAULT_COMPRESSION, Int32(windowBits), Int32(memoryLevel))
        precondition(result == Z_OK, "zlib's deflateInit2 failed: \(result)")
        stream = made
        return made
    }
}
