/// Where a WebSocket message (or control frame) is gathered: client payloads are unmasked on
/// their way in, eight bytes at a time, in the one pass that copies them, which also tells
/// whether they were all ASCII (so the UTF-8 check of most messages costs nothing more).
/// permessage-deflate inflates and deflates into one (`append(room:_:)`).
///
/// Thread rules: not thread-safe; one owner. Lifetime rule: owns its memory, freed in
/// `deinit`; `bytes` is valid until the next change.
final class WebSocketPayloadBuffer {
    private var storage: UnsafeMutableRawPointer?
    private(set) var count = 0
    private var capacity = 0

    deinit { storage?.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage, count: count) }

    /// Appends `piece` unmasked with `key` (the frame's mask key, as its four bytes in order)
    /// starting at `phase`, the offset of the piece's first byte in its frame's payload.
    /// Returns whether every byte appended is ASCII.
    func append(unmasking piece: UnsafeRawBufferPointer, key: UInt32, phase: Int) -> Bool {
        guard !piece.isEmpty else { return true }
        reserve(count + piece.count)
        let target = storage! + count
        count += piece.count
        // The key lined up with the piece's first byte, twice over: byte i of the pattern
        // (in memory order) masks byte i of each eight.
        let shift = UInt32((phase & 3) * 8)
        let rotated = shift == 0 ? key : (key >> shift) | (key << (32 - shift))
        let pattern = UInt64(rotated) | UInt64(rotated) << 32
        let highBits: UInt64 = 0x8080_8080_8080_8080
        var seen: UInt64 = 0
        var index = 0
        while index + 8 <= piece.count {
            let word = piece.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ pattern
            target.storeBytes(of: word, toByteOffset: index, as: UInt64.self)
            seen |= word
            index += 8
        }
        var tail = pattern
        while index < piece.count {
            let byte = piece[index] ^ UInt8(truncatingIfNeeded: tail)
            target.storeBytes(of: byte, toByteOffset: index, as: UInt8.self)
            seen |= UInt64(byte)
            tail >>= 8
            index += 1
        }
        return seen & highBits == 0
    }

    /// Makes room for `room` more bytes and lets `body` write into it; `body` returns how
    /// many it wrote, which are then part of the buffer.
    func append(room: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) {
        reserve(count + max(room, 1))
        let written = body(UnsafeMutableRawBufferPointer(start: storage! + count, count: room))
        count += written
    }

    /// Forgets the last `byteCount` bytes.
    func removeLast(_ byteCount: Int) { count -= byteCount }

    /// Empties the buffer; a large one gives its memory back, so an idle connection keeps none.
    func removeAll() {
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
