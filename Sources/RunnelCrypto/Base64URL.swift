/// Base64url without padding (RFC 4648 §5), the encoding of a JWT's three parts, decoded
/// strictly: only the 64 characters of its alphabet, no `=`, no whitespace, no length that
/// leaves a lone character, and no set bits in the unused tail of the last character, so one
/// token has one spelling.
///
/// Thread rules: pure functions, safe from any thread. Lifetime rule: none (a namespace).
package enum Base64URL {
    /// The bytes `text` encodes; nil when it is not strict unpadded base64url.
    package static func decode(_ text: Substring.UTF8View) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            guard let value = sextet(character) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // The bits left over must be zero: "QQ" is the one spelling of "A", not "QR".
        guard accumulator == 0 else { return nil }
        return bytes
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }
}
