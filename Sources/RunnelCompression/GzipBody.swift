/// The gzip format (RFC 1952) around raw deflate: a whole body (`compress`), and the header and
/// trailer a gzip'd event stream (`GzipEventStream`) writes at its ends. The header names no
/// file and no time; the trailer is the uncompressed bytes' CRC-32 and length (mod 2^32), both
/// little-endian.
///
/// Thread rules: not thread-safe; the front door's, on the loop thread. Lifetime rule: owns its
/// deflater (262 KiB of zlib's once used, counted by `ZlibMemory`) and its output; what
/// `compress` returns is the caller's.
package final class GzipBody {
    /// ID1, ID2, CM (deflate), FLG (none), MTIME (none), XFL, OS (Unix).
    package static let header: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03]

    private let deflater = Deflater(windowBits: 15, takesOverContext: false)

    package init() {}

    /// `body` in gzip.
    package func compress(_ body: [UInt8]) -> [UInt8] {
        body.withUnsafeBytes { bytes in
            let blocks = deflater.compressWhole(bytes)
            var gzip: [UInt8] = []
            gzip.reserveCapacity(Self.header.count + blocks.count + 8)
            gzip += Self.header
            gzip += blocks
            Self.appendTrailer(crc: SharedValueDeflate.crc(of: bytes), length: bytes.count, to: &gzip)
            return gzip
        }
    }

    /// The trailer of a stream whose uncompressed bytes had CRC-32 `crc` and `length` bytes.
    package static func appendTrailer(crc: UInt32, length: Int, to bytes: inout [UInt8]) {
        let size = UInt32(truncatingIfNeeded: length)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: size >> UInt32(shift))) }
    }
}
