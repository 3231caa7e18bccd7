/// Checks that bytes are UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
/// U+10FFFF) as they arrive in pieces, so a WebSocket text message split across frames or
/// reads is checked once, without being put together first, and fails at its first bad byte.
/// A value type; its state is the character in progress.
package struct UTF8Validator {
    /// Continuation bytes the character in progress still needs.
    private var remaining = 0
    /// The range the next continuation byte must be in: narrower than 0x80...0xBF right after
    /// a lead byte whose characters would otherwise be overlong, surrogates or too large.
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    package init() {}

    /// Whether the bytes so far end on a character boundary.
    package var isComplete: Bool { remaining == 0 }

    /// Checks the next piece; false at the first byte that cannot be UTF-8 (the validator is
    /// then of no further use).
    package mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        var index = 0
        while index < count {
            let byte = bytes[index]
            index += 1
            if remaining > 0 {
                guard byte >= lower && byte <= upper else { return false }
                remaining -= 1
                lower = 0x80
                upper = 0xBF
                continue
            }
            if byte < 0x80 {
                // ASCII, the common case, 32 bytes at a time, then 8.
                let highBits: UInt64 = 0x8080_8080_8080_8080
                while index + 32 <= count {
                    let words =
                        bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                        | bytes.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self)
                        | bytes.loadUnaligned(fromByteOffset: index + 16, as: UInt64.self)
                        | bytes.loadUnaligned(fromByteOffset: index + 24, as: UInt64.self)
                    guard words & highBits == 0 else { break }
                    index += 32
                }
                while index + 8 <= count, bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & highBits == 0 {
                    index += 8
                }
                continue
            }
            switch byte {
            case 0xC2...0xDF: remaining = 1
            case 0xE0: (remaining, lower) = (2, 0xA0)
            case 0xE1...0xEC, 0xEE...0xEF: remaining = 2
            case 0xED: (remaining, upper) = (2, 0x9F)
            case 0xF0: (remaining, lower) = (3, 0x90)
            case 0xF1...0xF3: remaining = 3
            case 0xF4: (remaining, upper) = (3, 0x8F)
            default: return false
            }
        }
        return true
    }
}
