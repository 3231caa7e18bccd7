/// A growing run of bytes that zlib and the WebSocket reader write into in place
/// (`append(room:_:)`): deflate and inflate output, a WebSocket message being gathered
/// (`append(unmasking:key:phase:)`, in RunnelWebSocket). A large one gives its memory back
/// when emptied, so an idle connection keeps none.
///
/// Thread rules: not thread-safe; one owner. Lifetime rule: owns its memory, freed in
/// `deinit`; `bytes` is valid until the next change.
package final class GrowableBuffer {
    private var storage: UnsafeMutableRawPointer?
    package private(set) var count = 0
    private var capacity = 0

    package init() {}

    deinit { storage?.deallocate() }

    package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage, count: count) }

    /// Makes room for `room` more bytes and lets `body` write into it; `body` returns how
    /// many it wrote, which are then part of the buffer.
    package func append(room: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) {
        reserve(count + max(room, 1))
        let written = body(UnsafeMutableRawBufferPointer(start: storage! + count, count: room))
        count += written
    }

    /// Appends a copy of `bytes`.
    package func append(_ bytes: UnsafeRawBufferPointer) {
        append(room: bytes.count) { space in
            space.copyMemory(from: bytes)
            return bytes.count
        }
    }

    /// Empties the buffer; a large one gives its memory back, so an idle connection keeps none.
    package func removeAll() {
        count = 0
        if capacity > Self.keptCapacity {
            storage?.deallocate()
            storage = nil
            capacity = 0
        }
    }

    private static let keptCapacity = 64 * 1024

    private func reserve(_ needed: Int) {
        guard needed > capacity else { return }
        let newCapacity = max(needed, capacity * 2, 256)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
        if let storage {
            grown.copyMemory(from: storage, byteCount: count)
            storage.deallocate()
        }
        storage = grown
        capacity = newCapacity
    }
}
