import CLibCrypto

/// SHA-256 of a token, with libcrypto: how `[[tokens]]` tables given as `sha256` are matched,
/// and how every configured token is compared with an offered one (digest against digest, in
/// constant time). Pure functions: safe from any thread.
package enum TokenDigest {
    package static let byteCount = 32

    /// The SHA-256 digest of `token`'s UTF-8 bytes.
    package static func of(_ token: String) -> [UInt8] {
        let input = Array(token.utf8)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let digested = EVP_Digest(input, input.count, &digest, &length, EVP_sha256(), nil)
        precondition(digested == 1 && length == UInt32(byteCount), "EVP_Digest(SHA-256) failed")
        return Array(digest[..<byteCount])
    }

    /// The digest `hex` spells (64 hex digits, either case); nil when it is not one.
    package static func parse(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == byteCount * 2 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
