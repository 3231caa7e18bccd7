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
///
/// A copy of a `ByteBuffer` is another reference to the same bytes. They live in one object's
/// own allocation, after the count: one `malloc` and one `free` per buffer (a published value
/// takes one buffer), where a class pointing at separately allocated bytes took two of each.
public struct ByteBuffer: @unchecked Sendable {
    /// The object holding the count and, in its tail, the bytes.
    @usableFromInline package final class Storage: ManagedBuffer<Int, UInt8> {}

    /// The object that keeps the bytes alive (for a writer that must hold them).
    @usableFromInline package let storage: Storage

    /// A buffer of `count` bytes filled in by `initialize`, which must write all of them.
    public init(count: Int, initializingWith initialize: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(count >= 0)
        storage = unsafeDowncast(Storage.create(minimumCapacity: count) { _ in count }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { elements in
            initialize(UnsafeMutableRawBufferPointer(start: elements, count: count))
        }
    }

    /// A buffer holding a copy of `bytes`.
    public init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count) { target in
            if !bytes.isEmpty { target.copyMemory(from: bytes) }
        }
    }

    /// A buffer holding a copy of `bytes`.
    public init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let array = Array(bytes)
        // Copy inside `withUnsafeBytes`: the pointer it lends is not valid after it returns.
        self.init(count: array.count) { target in
            array.withUnsafeBytes { source in target.copyMemory(from: source) }
        }
    }

    /// A write copies a buffer up to this size into its output and carries a larger one by
    /// reference; the server's deliveries split values the same way. Copying one this small
    /// costs less CPU than a segment of its own (one more iovec for the kernel).
    public static let copyThreshold = 4096

    /// The number of bytes. Read through the header's pointer: `ManagedBuffer.header` is a
    /// class's stored property, which Swift checks for exclusive access at run time.
    @inlinable @inline(__always) public var count: Int { storage.withUnsafeMutablePointerToHeader { $0.pointee } }

    /// The bytes; valid for as long as this buffer (any copy of it) is alive: an object's
    /// storage never moves.
    @inlinable @inline(__always) public var bytes: UnsafeRawBufferPointer {
        storage.withUnsafeMutablePointers { header, elements in
            UnsafeRawBufferPointer(start: elements, count: header.pointee)
        }
    }

    /// The bytes as an array (a copy).
    public var array: [UInt8] { Array(bytes) }

    /// Whether `other` is this very buffer (a copy of the reference), not just equal bytes.
    @inlinable public func isSameBuffer(as other: ByteBuffer) -> Bool { storage === other.storage }

    /// Whether `other` holds exactly these bytes.
    @inlinable @inline(__always) public func hasSameBytes(as other: UnsafeRawBufferPointer) -> Bool {
        count == other.count && (count == 0 || memcmp(bytes.baseAddress!, other.baseAddress!, count) == 0)
    }
}

extension ByteBuffer: Equatable {
    public static func == (lhs: ByteBuffer, rhs: ByteBuffer) -> Bool {
        lhs.hasSameBytes(as: rhs.bytes)
    }
}
