/// Turns the content of a validated JSON string (the bytes between its quotes) into a Swift
/// `String`, resolving escapes.
///
/// Only for bytes `JSONScanner` has accepted: escapes are known to be well formed and
/// surrogate escapes paired, so nothing here can fail. Unescaping never lengthens the text
/// (`\uXXXX` is 6 bytes for at most 3 of UTF-8, a pair 12 for 4), so the result is written
/// straight into the new string's storage. Stateless and thread-safe.
package enum JSONStringDecoding {
    package static func string(content: UnsafeRawBufferPointer, hasEscapes: Bool) -> String {
        guard hasEscapes else { return String(decoding: content, as: UTF8.self) }
        return String(unsafeUninitializedCapacity: content.count) { output in
            unescape(content, into: UnsafeMutableRawBufferPointer(output))
        }
    }

    /// Writes the unescaped UTF-8 of `content` into `output` (at least `content.count`
    /// bytes) and returns how many bytes it wrote.
    static func unescape(_ content: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        var read = 0
        var written = 0
        let count = content.count
        while read < count {
            let c = content[read]
            guard c == UInt8(ascii: "\\") else {
                output[written] = c
                written += 1
                read += 1
                continue
            }
            let kind = content[read + 1]
            read += 2
            switch kind {
            case UInt8(ascii: "b"): output[written] = 0x08
            case UInt8(ascii: "f"): output[written] = 0x0C
            case UInt8(ascii: "n"): output[written] = 0x0A
            case UInt8(ascii: "r"): output[written] = 0x0D
            case UInt8(ascii: "t"): output[written] = 0x09
            case UInt8(ascii: "u"):
                var scalar = UInt32(hexUnit(content, at: read))
                read += 4
                if scalar & 0xFC00 == 0xD800 {
                    let low = UInt32(hexUnit(content, at: read + 2))
                    read += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                written += writeUTF8(scalar, into: output, at: written)
                continue
            default: output[written] = kind  // `"`, `\` and `/` stand for themselves
            }
            written += 1
        }
        return written
    }

    private static func hexUnit(_ content: UnsafeRawBufferPointer, at offset: Int) -> UInt16 {
        var unit: UInt16 = 0
        for index in offset..<(offset + 4) {
            unit = unit << 4 | UInt16(JSONScanner.hexValue(content[index]) ?? 0)
        }
        return unit
    }

    /// Writes `scalar` (a valid code point) as UTF-8; returns the number of bytes.
    static func writeUTF8(_ scalar: UInt32, into output: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        switch scalar {
        case 0..<0x80:
            output[offset] = UInt8(scalar)
            return 1
        case 0x80..<0x800:
            output[offset] = UInt8(0xC0 | scalar >> 6)
            output[offset + 1] = UInt8(0x80 | scalar & 0x3F)
            return 2
        case 0x800..<0x10000:
            output[offset] = UInt8(0xE0 | scalar >> 12)
            output[offset + 1] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[offset + 2] = UInt8(0x80 | scalar & 0x3F)
            return 3
        default:
            output[offset] = UInt8(0xF0 | scalar >> 18)
            output[offset + 1] = UInt8(0x80 | scalar >> 12 & 0x3F)
            output[offset + 2] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[offset + 3] = UInt8(0x80 | scalar & 0x3F)
            return 4
        }
    }
}
