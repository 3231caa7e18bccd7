import RunnelBytes

/// Appends JSON text to a growable byte array: the one place the server turns values into
/// bytes, without Foundation.
///
/// - Strings are quoted and escaped: `"` and `\` with a backslash; U+0008, U+0009, U+000A,
///   U+000C and U+000D as `\b \t \n \f \r`; every other control character below U+0020 as
///   `\u00XX`. Everything else, `/` and non-ASCII included, is written as its UTF-8.
/// - Numbers: an integral Double within ±2^53 is written as an integer (`2`, not `2.0`;
///   `-0.0` as `0`); any other finite Double as Swift's shortest round-trip `description`,
///   which is always valid JSON for finite values (`0.1`, `1e+16`, `5e-324`). Infinity and NaN
///   cannot occur as values (the parser rejects numbers a Double cannot hold and the
///   expression evaluator must turn such results into `eval` errors); should one reach the
///   writer anyway it writes `null`, so the output is always valid JSON.
/// - Output is compact: no whitespace.
///
/// A value type, used by one thread at a time.
public struct JSONWriter {
    public private(set) var bytes: [UInt8]

    public init(reservingCapacity capacity: Int = 128) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inline(__always) public mutating func append(_ byte: UInt8) { bytes.append(byte) }

    /// Appends bytes as they are (they must already be JSON, or part of it).
    @inline(__always) public mutating func append(raw: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: raw)
    }

    /// Appends a buffer's bytes as they are.
    public mutating func append(raw buffer: ByteBuffer) {
        withExtendedLifetime(buffer) { bytes.append(contentsOf: buffer.bytes) }
    }

    /// Appends ASCII text as it is (JSON punctuation and known-safe keys).
    @inline(__always) public mutating func append(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Writes `value` compactly. Shallow levels recurse (fast); below `recursionLimit` levels
    /// the rest is written iteratively, so deeply nested values cannot overflow the stack.
    public mutating func write(_ value: JSONValue) {
        writeRecursively(value, depth: 0)
    }

    /// How deep `write` recurses before it continues without recursion.
    static let recursionLimit = 64

    private mutating func writeRecursively(_ value: JSONValue, depth: Int) {
        switch value {
        case .null: append("null")
        case .bool(let flag): flag ? append("true") : append("false")
        case .number(let number): writeNumber(number)
        case .string(let string): writeString(string)
        case .array(let elements):
            guard depth < Self.recursionLimit else { return writeIteratively(value) }
            append(UInt8(ascii: "["))
            for index in elements.indices {
                if index > 0 { append(UInt8(ascii: ",")) }
                writeRecursively(elements[index], depth: depth + 1)
            }
            append(UInt8(ascii: "]"))
        case .object(let object):
            guard depth < Self.recursionLimit else { return writeIteratively(value) }
            append(UInt8(ascii: "{"))
            let members = object.members
            for index in members.indices {
                if index > 0 { append(UInt8(ascii: ",")) }
                writeString(members[index].key)
                append(UInt8(ascii: ":"))
                writeRecursively(members[index].value, depth: depth + 1)
            }
            append(UInt8(ascii: "}"))
        }
    }

    /// Writes `value` with an explicit stack of open containers instead of recursion.
    private mutating func writeIteratively(_ value: JSONValue) {
        var pending: [PendingContainer] = []
        var current = value
        while true {
            switch current {
            case .null: append("null")
            case .bool(let flag): flag ? append("true") : append("false")
            case .number(let number): writeNumber(number)
            case .string(let string): writeString(string)
            case .array(let elements):
                append(UInt8(ascii: "["))
                pending.append(.array(elements, next: 0))
            case .object(let object):
                append(UInt8(ascii: "{"))
                pending.append(.object(object.members, next: 0))
            }
            // Find the next value to write, closing finished containers.
            var found = false
            while !found, let top = pending.popLast() {
                switch top {
                case .array(let elements, let next):
                    if next < elements.count {
                        if next > 0 { append(UInt8(ascii: ",")) }
                        current = elements[next]
                        pending.append(.array(elements, next: next + 1))
                        found = true
                    } else {
                        append(UInt8(ascii: "]"))
                    }
                case .object(let members, let next):
                    if next < members.count {
                        if next > 0 { append(UInt8(ascii: ",")) }
                        writeString(members[next].key)
                        append(UInt8(ascii: ":"))
                        current = members[next].value
                        pending.append(.object(members, next: next + 1))
                        found = true
                    } else {
                        append(UInt8(ascii: "}"))
                    }
                }
            }
            if !found { return }
        }
    }

    private enum PendingContainer {
        case array([JSONValue], next: Int)
        case object([(key: String, value: JSONValue)], next: Int)
    }

    /// Writes a raw value's exact bytes.
    public mutating func write(_ raw: RawJSON) { append(raw: raw.buffer) }

    /// Writes a number (see the type's rules).
    public mutating func writeNumber(_ value: Double) {
        guard value.isFinite else {
            append("null")
            return
        }
        if value.magnitude <= 9_007_199_254_740_992 {
            let integer = Int64(value)
            if Double(integer) == value {
                writeInteger(integer)
                return
            }
        }
        bytes.append(contentsOf: value.description.utf8)
    }

    /// Writes an integer in decimal.
    public mutating func writeInteger<Integer: FixedWidthInteger>(_ value: Integer) {
        if value < 0 { append(UInt8(ascii: "-")) }
        // 20 digits hold any UInt64.
        withUnsafeTemporaryAllocation(byteCount: 20, alignment: 1) { digits in
            let count = Self.writeDecimal(UInt64(value.magnitude), into: digits)
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: digits[..<count]))
        }
    }

    /// Writes `value` in decimal at the start of `target` (room for 20 digits); returns how many
    /// digits. Also how a `next` event's position is written, once per delivery, where
    /// `String(value)` would cost ten times as much.
    @inline(__always)
    public static func writeDecimal(_ value: UInt64, into target: UnsafeMutableRawBufferPointer) -> Int {
        var count = 1
        var rest = value / 10
        while rest > 0 {
            count += 1
            rest /= 10
        }
        var remaining = value
        for index in stride(from: count - 1, through: 0, by: -1) {
            target[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10)
            remaining /= 10
        }
        return count
    }

    /// Writes `string` quoted and escaped.
    public mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { writeString(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// Whether a JSON string cannot hold `byte` as it is: a quote, a backslash or a control
    /// character.
    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// Writes the UTF-8 text `utf8` quoted and escaped. The text must be valid UTF-8 (it is
    /// copied through unchanged apart from escapes).
    public mutating func writeString(utf8: UnsafeRawBufferPointer) {
        append(UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<utf8.count {
            let c = utf8[index]
            guard Self.needsEscape(c) else { continue }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[runStart..<index]))
            runStart = index + 1
            append(UInt8(ascii: "\\"))
            switch c {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): append(c)
            case 0x08: append(UInt8(ascii: "b"))
            case 0x09: append(UInt8(ascii: "t"))
            case 0x0A: append(UInt8(ascii: "n"))
            case 0x0C: append(UInt8(ascii: "f"))
            case 0x0D: append(UInt8(ascii: "r"))
            default:
                let hex: StaticString = "0123456789abcdef"
                append("u00")
                append(hex.utf8Start[Int(c >> 4)])
                append(hex.utf8Start[Int(c & 0xF)])
            }
        }
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        append(UInt8(ascii: "\""))
    }

    /// The bytes written so far, as one immutable shared buffer.
    public func makeBuffer() -> ByteBuffer {
        bytes.withUnsafeBytes { ByteBuffer(copying: $0) }
    }
}

extension JSONValue {
    /// The compact JSON text of this value (see `JSONWriter` for the number and string rules).
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.bytes
    }

    /// The compact JSON text of this value, as a String.
    public var jsonText: String { String(decoding: jsonBytes, as: UTF8.self) }
}

extension JSONWriter {
    /// `string` as a JSON string literal, quotes included: the one escaper, for code that
    /// builds text rather than bytes (expression `str()`, error messages, config values).
    public static func stringLiteral(_ string: String) -> String {
        var writer = JSONWriter(reservingCapacity: string.utf8.count + 2)
        writer.writeString(string)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// `number` as JSON text, by the writer's number rules.
    public static func numberText(_ number: Double) -> String {
        var writer = JSONWriter(reservingCapacity: 24)
        writer.writeNumber(number)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
