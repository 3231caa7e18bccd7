import CZlib
import RunnelCompression

/// Inflates a client's compressed messages (RFC 7692, 7.2.2): raw deflate with zlib, the
/// message's bytes followed by `00 00 ff ff`, into a buffer that never grows past the message
/// limit: the output room given to zlib is at most one byte over what is left, so a
/// decompression bomb stops at `limit + 1` bytes and is refused (`tooBig`, closed with 1009).
/// The window is 32 KiB whatever the client's window (a larger window reads what a smaller
/// one wrote). With `client_no_context_takeover` the stream is reset after each message;
/// else the window carries over, as the client's does. A message ending in a final block
/// (BFINAL, which RFC 7692 allows) ends the stream: it is reset, as the client's must be, and
/// gets no `00 00 ff ff` (which, read as the start of a new stream, would be an unfinished
/// stored block that breaks the next message).
///
/// Thread rules: not thread-safe; one owner (a connection's frame reader, on the loop
/// thread). Lifetime rule: owns its zlib stream (about 7 KiB and the 32 KiB window, made at
/// the first compressed message), ended in `deinit`.
package final class WebSocketInflater {
    package enum Outcome: Equatable {
        case inflated
        /// The inflated message is longer than the limit.
        case tooBig
        /// Not a raw deflate stream.
        case corrupt
    }

    private let resetsEachMessage: Bool
    private var stream: UnsafeMutablePointer<z_stream>?
    /// The piece zlib reads at most at once, and writes at most at once.
    private static let chunk = 16 * 1024
    private static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    package init(resetsEachMessage: Bool) { self.resetsEachMessage = resetsEachMessage }

    deinit {
        guard let stream else { return }
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Inflates the compressed message `input` and appends it to `output`, which may hold at
    /// most `limit` bytes in all.
    package func inflate(_ input: UnsafeRawBufferPointer, into output: GrowableBuffer, limit: Int) -> Outcome {
        guard let stream = openStream() else { return .corrupt }
        var endsStream = false
        var outcome = feed(input, stream, output, limit, endsStream: &endsStream)
        if outcome == .inflated && !endsStream {
            outcome = Self.tail.withUnsafeBytes { feed($0, stream, output, limit, endsStream: &endsStream) }
        }
        if outcome != .inflated || resetsEachMessage { inflateReset(stream) }
        return outcome
    }

    private func openStream() -> UnsafeMutablePointer<z_stream>? {
        if let stream { return stream }
        let made = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        made.initialize(to: z_stream())
        ZlibMemory.track(made)
        guard runnel_inflate_init(made, 15) == Z_OK else {
            made.deallocate()
            return nil
        }
        stream = made
        return made
    }

    /// Gives zlib all of `input`, appending what it writes to `output`; `endsStream` tells
    /// whether the input ended with a final block.
    private func feed(
        _ input: UnsafeRawBufferPointer, _ stream: UnsafeMutablePointer<z_stream>, _ output: GrowableBuffer,
        _ limit: Int, endsStream: inout Bool
    ) -> Outcome {
        endsStream = false
        guard let base = input.baseAddress else { return .inflated }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = UInt32(input.count)
        while true {
            // One byte more than the limit allows tells a message that is too long.
            let room = min(Self.chunk, limit - output.count + 1)
            var result = Z_OK
            output.append(room: room) { space in
                stream.pointee.next_out = space.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = UInt32(space.count)
                result = CZlib.inflate(stream, Z_SYNC_FLUSH)
                return space.count - Int(stream.pointee.avail_out)
            }
            if output.count > limit { return .tooBig }
            switch result {
            case Z_STREAM_END:
                inflateReset(stream)
                // What follows a final block starts a new stream.
                if stream.pointee.avail_in == 0 {
                    endsStream = true
                    return .inflated
                }
                continue
            case Z_OK, Z_BUF_ERROR:
                // Done when zlib has read everything and had room to spare.
                if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return .inflated }
                if result == Z_BUF_ERROR && stream.pointee.avail_out > 0 { return .corrupt }
            default:
                return .corrupt
            }
        }
    }
}
