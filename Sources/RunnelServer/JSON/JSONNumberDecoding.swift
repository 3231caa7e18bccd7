/// Converts a validated JSON number token into a `Double`, correctly rounded.
///
/// Most numbers on the wire are short: an integer of up to 15 digits, or a decimal whose
/// digits (without the point) fit in 15 digits and whose power of ten is at most 22, is exact
/// with one multiply or divide by an exactly representable power of ten (Clinger's fast
/// path). Everything else goes to the standard library's correctly rounded parser (no
/// Foundation). Stateless and thread-safe.
enum JSONNumberDecoding {
    /// The value of `bytes`, which `JSONScanner` has accepted as a number; nil when its
    /// magnitude is too large for a Double (JSON allows it; our values cannot hold it).
    @inline(__always)
    static func double(_ bytes: UnsafeRawBufferPointer) -> Double? {
        if let exact = fastPath(bytes) { return exact }
        return parsed(bytes)
    }

    /// The standard library's parse, for what the fast path cannot do exactly.
    private static func parsed(_ bytes: UnsafeRawBufferPointer) -> Double? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    // The bytes are a valid number token, so the fast path reads them without bounds checks
    // and counts with wrapping arithmetic: its counters stay far below any overflow (it gives
    // up past 15 digits or an exponent of 1000).
    private static func fastPath(_ bytes: UnsafeRawBufferPointer) -> Double? {
        var index = 0
        let count = bytes.count
        let negative = bytes[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        var scale = 0  // the power of ten to apply to `mantissa`
        var seenPoint = false
        while index < count {
            let c = bytes[index]
            if c == UInt8(ascii: ".") {
                seenPoint = true
            } else if c &- UInt8(ascii: "0") < 10 {
                // Leading zeros add no precision.
                if mantissa != 0 || c != UInt8(ascii: "0") { digits &+= 1 }
                guard digits <= 15 else { return nil }
                mantissa = mantissa &* 10 &+ UInt64(c &- UInt8(ascii: "0"))
                if seenPoint { scale &-= 1 }
            } else {
                break
            }
            index &+= 1
        }
        if index < count {  // an exponent
            index &+= 1
            var exponentNegative = false
            if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index &+= 1
            }
            var exponent = 0
            while index < count {
                exponent = exponent &* 10 &+ Int(bytes[index] &- UInt8(ascii: "0"))
                guard exponent < 1000 else { return nil }
                index &+= 1
            }
            scale &+= exponentNegative ? -exponent : exponent
        }
        var value = Double(mantissa)
        if mantissa == 0 {
            value = 0
        } else if scale < 0 {
            guard scale >= -22 else { return nil }
            value /= powerOfTen(-scale)
        } else if scale > 0 {
            guard scale <= 22 else { return nil }
            value *= powerOfTen(scale)
        }
        return negative ? -value : value
    }

    /// 10^`exponent` (0 ≤ `exponent` ≤ 22), exact.
    @inline(__always)
    private static func powerOfTen(_ exponent: Int) -> Double {
        powersOfTen.withUnsafeBufferPointer { $0[exponent] }
    }
}
