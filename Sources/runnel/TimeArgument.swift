import RunnelJSON

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `--since` and `--until`'s TIME as `sub` sends it: a duration ago (`90s`, `15m`, `1h`,
/// `2d`, `500ms`) as Unix milliseconds by this machine's clock; Unix milliseconds as given;
/// anything else as a string, for the server to read as RFC 3339 (it says when it cannot).
///
/// Thread rules: pure functions but for the clock read.
enum TimeArgument {
    /// The field's value; nil when `text` is empty, or a malformed duration or number.
    static func value(_ text: String) -> JSONValue? {
        guard let last = text.unicodeScalars.last else { return nil }
        if text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return Double(text).map(JSONValue.number)
        }
        guard last.properties.isAlphabetic, let ago = milliseconds(ofDuration: text) else {
            return looksLikeDateTime(text) ? .string(text) : nil
        }
        return .number(Double(max(0, now() - ago)))
    }

    private static let units: [(suffix: String, milliseconds: Double)] = [
        ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000),
    ]

    /// `15m` as milliseconds; nil when it is not a number and one of `units`.
    private static func milliseconds(ofDuration text: String) -> Int64? {
        for unit in units where text.hasSuffix(unit.suffix) {
            guard let count = Double(text.dropLast(unit.suffix.count)), count >= 0, count.isFinite else { continue }
            return Int64(count * unit.milliseconds)
        }
        return nil
    }

    /// A date-time starts with a four-digit year and a dash; the server checks the rest.
    private static func looksLikeDateTime(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count >= 20 && bytes[..<4].allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            && bytes[4] == UInt8(ascii: "-")
    }

    private static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}
