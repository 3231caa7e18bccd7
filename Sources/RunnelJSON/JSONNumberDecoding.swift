/// Converts a validated JSON number token into a `Double`, correctly rounded.
///
/// Most numbers on the wire are short: one whose digits (without the point) make an integer
/// of at most 2^53, with a power of ten of at most 22, is exact with one multiply or divide by
/// an exactly representable power of ten (Clinger's fast path). Everything else goes to the
/// standard library's correctly rounded parser (no Foundation). Stateless and thread-safe.
package enum JSONNumberDecoding {
    /// The value of `bytes`, which `JSONScanner` has accepted as a number; nil when its
    /// magnitude is too large for a Double (JSON allows it; our values cannot hold it).
    @inline(__always)
    package static func double(_ bytes: UnsafeRawBufferPointer) -> Double? {
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
    // and counts with wrapping arithmetic: the mantissa cannot overflow in 19 digits, and the
    // exponent stops before 1000. The integer and the fraction digits are read by two plain
    // loops (one loop testing for the point at every digit was slower).
    private static func fastPath(_ bytes: UnsafeRawBufferPointer) -> Double? {
        let count = bytes.count
        let negative = bytes[0] == UInt8(ascii: "-")
        var index = negative ? 1 : 0
        var mantissa: UInt64 = 0
        var digits = appendDigits(of: bytes, from: &index, to: &mantissa)
        var scale = 0  // the power of ten to apply to `mantissa`
        if index < count && bytes[index] == UInt8(ascii: ".") {
            index &+= 1
            let fractionDigits = appendDigits(of: bytes, from: &index, to: &mantissa)
            scale = -fractionDigits
            digits &+= fractionDigits
        }
        // Leading zeros count too: a number with more than 19 digits is rare enough to go
        // the slow way even when they are zeros.
        guard digits <= 19 else { return nil }
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
        var value: Double = 0
        if mantissa != 0 {
            // Clinger: a mantissa of at most 2^53 and a power of ten of at most 22 are both
            // exact Doubles, so one correctly rounded multiply or divide is the answer.
            guard mantissa <= 1 << 53, scale >= -22, scale <= 22 else { return nil }
            value = Double(mantissa)
            if scale < 0 {
                value /= powerOfTen(-scale)
            } else if scale > 0 {
                value *= powerOfTen(scale)
            }
        }
        return negative ? -value : value
    }

    /// Appends the decimal digits of `bytes` from `index` on to `mantissa` (wrapping: the caller
    /// checks the count), leaving `index` on the first byte that is not one; returns how many.
    @inline(__always)
    private static func appendDigits(
        of bytes: UnsafeRawBufferPointer, from index: inout Int, to mantissa: inout UInt64
    ) -> Int {
        let start = index
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            mantissa = mantissa &* 10 &+ UInt64(digit)
            index &+= 1
        }
        return index &- start
    }

    /// 10^`exponent` (0 ≤ `exponent` ≤ 22), exact.
    @inline(__always)
    private static func powerOfTen(_ exponent: Int) -> Double {
        powersOfTen.withUnsafeBufferPointer { $0[exponent] }
    }
}
