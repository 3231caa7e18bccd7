/// A time as `sub`'s `since` and `until` (version 1.3) and `/events`' query give it: Unix
/// milliseconds as a number, or an RFC 3339 date-time string (`2026-12-02T14:00:00Z`,
/// `2026-12-02T15:00:00.250+01:00`), read as Unix milliseconds.
///
/// RFC 3339 is parsed here rather than through Foundation's `ISO8601DateFormatter`: the
/// server links no Foundation, and the grammar is one line of the RFC (section 5.6).
///
/// Thread rules: pure functions.
package enum PublishTime {
    /// The latest time accepted: the year 9999's end, where RFC 3339's years end too.
    static let latest: Int64 = 253_402_300_799_999

    /// `number` (Unix ms) as a time; nil unless finite and from 0 to `latest`. A fraction of a
    /// millisecond is dropped.
    package static func milliseconds(_ number: Double) -> Int64? {
        guard number.isFinite, number >= 0, number <= Double(latest) else { return nil }
        return Int64(number)
    }

    /// An RFC 3339 date-time as Unix ms; nil when `text` is not one (or before 1970).
    package static func milliseconds(rfc3339 text: String) -> Int64? {
        var reader = DigitReader(Array(text.utf8))
        guard let year = reader.number(digits: 4), reader.skip("-"), let month = reader.number(digits: 2),
            reader.skip("-"), let day = reader.number(digits: 2), reader.skipAny("Tt "),
            let hour = reader.number(digits: 2), reader.skip(":"), let minute = reader.number(digits: 2),
            reader.skip(":"), let second = reader.number(digits: 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60,
            second <= 60
        else { return nil }
        var milliseconds: Int64 = 0
        if reader.skip(".") {
            var scale: Int64 = 100
            var count = 0
            while let digit = reader.digit() {
                milliseconds += Int64(digit) * scale
                scale /= 10
                count += 1
            }
            guard count > 0 else { return nil }
        }
        var offsetMinutes: Int64 = 0
        if !reader.skipAny("Zz") {
            guard let sign = reader.next(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-"),
                let offsetHours = reader.number(digits: 2), reader.skip(":"),
                let offsetMinute = reader.number(digits: 2), offsetHours < 24, offsetMinute < 60
            else { return nil }
            offsetMinutes = Int64(offsetHours * 60 + offsetMinute) * (sign == UInt8(ascii: "-") ? -1 : 1)
        }
        guard reader.isAtEnd else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        // A leap second is read as the second after it.
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - offsetMinutes * 60
        let result = seconds * 1000 + milliseconds
        return result >= 0 && result <= latest ? result : nil
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the proleptic Gregorian date (the civil-from-days algorithm
    /// run backwards: eras of 400 years, years starting in March).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
        let shiftedYear = Int64(month <= 2 ? year - 1 : year)
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = Int64((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1)
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// Reads ASCII digits and separators off a byte array, front to back.
private struct DigitReader {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index == bytes.count }

    mutating func next() -> UInt8? {
        guard index < bytes.count else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func digit() -> Int? {
        guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else {
            return nil
        }
        defer { index += 1 }
        return Int(bytes[index] - UInt8(ascii: "0"))
    }

    /// Exactly `digits` digits as a number.
    mutating func number(digits: Int) -> Int? {
        var value = 0
        for _ in 0..<digits {
            guard let digit = digit() else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    mutating func skip(_ character: Unicode.Scalar) -> Bool { skipAny(String(character)) }

    /// Skips one byte that is one of `characters` (ASCII); false when the next is none of them.
    mutating func skipAny(_ characters: String) -> Bool {
        guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
        index += 1
        return true
    }
}
