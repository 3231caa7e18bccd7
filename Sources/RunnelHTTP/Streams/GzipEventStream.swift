import CZlib
import RunnelBytes
import RunnelCompression
import RunnelServer
import RunnelUV

/// One gzip'd event stream (RFC 1952 around RFC 1951), written as events happen: the gzip header
/// first, then every event as deflate blocks that end on a byte boundary, so the client can
/// inflate each event as soon as it arrives (compression delays none), and at the end the final
/// block and the trailer. A `next` event's value is the front door's `SharedValueDeflate`
/// blocks, compressed once for every stream it goes to; the event's own fields and line ends,
/// and every other event, go as stored blocks. The trailer's CRC-32 is kept as the stream goes,
/// the shared value's part combined in from its own CRC without reading it again.
///
/// Thread rules: a value owned by its stream's transport, on the loop thread. Lifetime rule:
/// holds nothing; its transport's connection carries what it writes.
struct GzipEventStream {
    private var crc: UInt32 = 0
    private var length = 0

    /// The gzip header: the stream's first bytes after the HTTP head.
    func start(on connection: any ByteStream) {
        GzipBody.header.withUnsafeBytes { _ = connection.write(copying: $0) }
    }

    /// `bytes` as stored blocks.
    mutating func write(_ bytes: UnsafeRawBufferPointer, on connection: any ByteStream) {
        let blocks = GrowableBuffer()
        StoredBlocks.append(bytes, to: blocks)
        connection.write(copying: blocks.bytes)
        count(bytes)
    }

    /// A `next` event: `fields`, then the value's shared `blocks`, then `tail` (each of `fields`
    /// and `tail` under 64 KiB, one stored block each).
    mutating func writeNext(
        fields: UnsafeRawBufferPointer, value blocks: SharedValueDeflate.Blocks, tail: UnsafeRawBufferPointer,
        on connection: any ByteStream
    ) {
        Self.withStoredBlock(fields) { first in
            Self.withStoredBlock(tail) { last in
                _ = connection.write(copying: first, blocks.bytes, last, UnsafeRawBufferPointer(start: nil, count: 0))
            }
        }
        count(fields)
        crc = UInt32(truncatingIfNeeded: crc32_combine_op(UInt(crc), UInt(blocks.crc), blocks.combineOperator))
        length += blocks.length
        count(tail)
    }

    /// The final block and the trailer: nothing may follow.
    func finish(on connection: any ByteStream) {
        var end = StoredBlocks.end
        GzipBody.appendTrailer(crc: crc, length: length, to: &end)
        end.withUnsafeBytes { _ = connection.write(copying: $0) }
    }

    private mutating func count(_ bytes: UnsafeRawBufferPointer) {
        crc = SharedValueDeflate.crc(of: bytes, continuing: crc)
        length += bytes.count
    }

    /// Calls `body` with `bytes` (under 64 KiB) as one stored block, put together on the stack.
    private static func withStoredBlock(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        withUnsafeTemporaryAllocation(byteCount: 5 + bytes.count, alignment: 1) { space in
            StoredBlocks.writeHeader(length: bytes.count, into: space)
            if !bytes.isEmpty { (space.baseAddress! + 5).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
            body(UnsafeRawBufferPointer(space))
        }
    }
}
