#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An immutable run of bytes at a stable address, shared by reference.
///
/// The server copies a published value's bytes into one `ByteBuffer` and hands that same
/// buffer to every subscriber's connection; the transport points `uv_buf_t`s straight at it
/// and keeps a reference until libuv's write callback has run, so the memory outlives every
/// write that uses it. The bytes never change after `init`, so it may be read from any thread.
public final class ByteBuffer: @unchecked Sendable {
    private let base: UnsafeMutableRawPointer?
    /// The number of bytes.
    public let count: Int

    /// A buffer holding a copy of `bytes`.
    public init(copying bytes: UnsafeRawBufferPointer) {
        count = bytes.count
        if count == 0 {
            base = nil
        } else {
            let memory = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 1)
            memory.copyMemory(from: bytes.baseAddress!, byteCount: count)
            base = memory
        }
    }

    /// A buffer holding a copy of `bytes`.
    public convenience init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let array = Array(bytes)
        // Copy inside `withUnsafeBytes`: the pointer it lends is not valid after it returns.
        self.init(count: array.count) { target in
            array.withUnsafeBytes { source in target.copyMemory(from: source) }
        }
    }

    /// A buffer of `count` bytes filled in by `initialize`, which must write all of them.
    public init(count: Int, initializingWith initialize: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(count >= 0)
        self.count = count
        if count == 0 {
            base = nil
        } else {
            let memory = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 1)
            initialize(UnsafeMutableRawBufferPointer(start: memory, count: count))
            base = memory
        }
    }

    deinit { base?.deallocate() }

    /// The bytes; valid for as long as this buffer is alive.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// The bytes as an array (a copy).
    public var array: [UInt8] { Array(bytes) }

    /// Whether `other` holds exactly these bytes.
    public func hasSameBytes(as other: UnsafeRawBufferPointer) -> Bool {
        count == other.count && (count == 0 || memcmp(base!, other.baseAddress!, count) == 0)
    }
}

extension ByteBuffer: Equatable {
    public static func == (lhs: ByteBuffer, rhs: ByteBuffer) -> Bool {
        lhs.count == rhs.count
            && (lhs.count == 0 || memcmp(lhs.bytes.baseAddress!, rhs.bytes.baseAddress!, lhs.count) == 0)
    }
}
