import RunnelCompression

extension GrowableBuffer {
    /// Appends `piece` unmasked with `key` (the frame's mask key, as its four bytes in order)
    /// starting at `phase`, the offset of the piece's first byte in its frame's payload.
    /// Returns whether every byte appended is ASCII.
    package func append(unmasking piece: UnsafeRawBufferPointer, key: UInt32, phase: Int) -> Bool {
        guard !piece.isEmpty else { return true }
        var allASCII = true
        append(room: piece.count) { space in
            allASCII = Self.unmask(piece, into: space.baseAddress!, key: key, phase: phase)
            return piece.count
        }
        return allASCII
    }

    /// Writes `piece` unmasked to `target`; whether every byte is ASCII.
    private static func unmask(
        _ piece: UnsafeRawBufferPointer, into target: UnsafeMutableRawPointer, key: UInt32, phase: Int
    ) -> Bool {
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
}
