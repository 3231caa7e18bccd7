/// JSON's number grammar, shared by number literals in expressions and by `num(s)`.
///
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: no leading `+`, no leading zeros, no bare
/// `.5` or `5.`, no `inf`/`nan`/hex (which `Double(String)` alone would accept).
package enum ExpressionNumberSyntax {
    /// The end of the number that starts at `start`, or nil when no valid number starts there.
    /// The number ends at the first byte that cannot continue it; the caller decides whether
    /// what follows is allowed.
    package static func scan(_ bytes: [UInt8], from start: Int, allowSign: Bool) -> Int? {
        var index = start
        func digit(_ at: Int) -> Bool { at < bytes.count && bytes[at] >= 0x30 && bytes[at] <= 0x39 }
        if allowSign, index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard digit(index) else { return nil }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if digit(index) { return nil }  // leading zero
        } else {
            while digit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digit(index) else { return nil }
            while digit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digit(index) else { return nil }
            while digit(index) { index += 1 }
        }
        return index
    }

    /// The value of the already-validated number text in `bytes[range]`; nil when it is not
    /// finite as a double (`1e999`).
    package static func value(_ bytes: ArraySlice<UInt8>) -> Double? {
        guard let value = Double(String(decoding: bytes, as: UTF8.self)), value.isFinite else { return nil }
        return value
    }

    /// Parses a whole string as one JSON number, allowing JSON whitespace around it.
    package static func parse(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        var start = 0
        while start < bytes.count, isSpace(bytes[start]) { start += 1 }
        guard let end = scan(bytes, from: start, allowSign: true) else { return nil }
        var rest = end
        while rest < bytes.count, isSpace(bytes[rest]) { rest += 1 }
        guard rest == bytes.count else { return nil }
        return value(bytes[start..<end])
    }
}
