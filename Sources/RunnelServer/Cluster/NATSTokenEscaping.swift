/// Text as bytes NATS takes in a subject or a key-value key: `A-Z a-z 0-9 - _` as they are,
/// `.` as it is where it may separate tokens, every other byte (and `=`) as `=` and two hex
/// digits. A subject name becomes a bucket key (`ClusterDefinition.key(of:)`), a map's key a
/// subject token of its stream (`ClusterSubjectStore+Maps`). Thread rules: pure functions.
enum NATSTokenEscaping {
    /// `text` escaped; `keepingDots` leaves `.` as it is.
    static func escape(_ text: String, keepingDots: Bool) -> String {
        var escaped: [UInt8] = []
        escaped.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isKept(byte, keepingDots: keepingDots) {
                escaped.append(byte)
            } else {
                escaped.append(UInt8(ascii: "="))
                escaped.append(hexDigits[Int(byte >> 4)])
                escaped.append(hexDigits[Int(byte & 0xF)])
            }
        }
        return String(decoding: escaped, as: UTF8.self)
    }

    /// The text `escaped` stands for; nil for bytes `escape` does not make, or bytes that are
    /// not UTF-8.
    static func unescape(_ escaped: Substring, keepingDots: Bool) -> String? {
        var bytes: [UInt8] = []
        var iterator = escaped.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "=") else {
                guard isKept(byte, keepingDots: keepingDots) else { return nil }
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func isKept(_ byte: UInt8, keepingDots: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        case UInt8(ascii: "."): return keepingDots
        default: return false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
