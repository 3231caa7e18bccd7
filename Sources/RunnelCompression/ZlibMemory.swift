import CZlib
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The memory zlib holds for every compressor and decompressor of the process: its streams are
/// given these allocation functions (`track(_:)`, before their `deflateInit2` / `inflateInit2`),
/// which count every byte zlib asks for and gives back, so `stats.compression.memory_bytes` and
/// `runnel_compression_memory_bytes` report what compression really costs, not an estimate.
/// Each block carries its size in a 16-byte header, for the free to subtract.
///
/// Thread rules: any thread (an atomic; zlib allocates only when a stream is made or ended).
/// Lifetime rule: the count lives as long as the process.
package enum ZlibMemory {
    private static let allocated = Atomic<Int>(0)
    private static let header = 16

    /// Bytes zlib holds now, all streams together.
    package static var bytes: Int { allocated.load(ordering: .relaxed) }

    /// Makes `stream` allocate through the counted functions.
    package static func track(_ stream: UnsafeMutablePointer<z_stream>) {
        stream.pointee.zalloc = { _, items, size in ZlibMemory.allocate(Int(items) * Int(size)) }
        stream.pointee.zfree = { _, block in ZlibMemory.release(block) }
    }

    private static func allocate(_ byteCount: Int) -> UnsafeMutableRawPointer? {
        guard let base = malloc(byteCount + header) else { return nil }
        base.storeBytes(of: byteCount, as: Int.self)
        allocated.add(byteCount, ordering: .relaxed)
        return base + header
    }

    private static func release(_ block: UnsafeMutableRawPointer?) {
        guard let block else { return }
        let base = block - header
        allocated.subtract(base.load(as: Int.self), ordering: .relaxed)
        free(base)
    }
}
