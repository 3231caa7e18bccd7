import RunnelJSON

/// A minimal compact JSON writer for `str(x)` and error messages.
///
/// The traversal is its own because it is metered (a step per value, the strings' bytes, and
/// every byte written counted against the evaluation's budget before it is written, so a
/// value built from many references to one large input stops at the limit rather than being
/// written out in full); strings and numbers are
/// written by `JSONWriter`'s rules. Numbers: an integral value within ±2^53
/// is written without a fraction (`2`, and `-0` as `0`); others in Swift's shortest
/// round-tripping form (`0.30000000000000004`, `1e+100`). Strings escape `"`, `\` and control
/// characters; other characters are written as UTF-8. Object members are written as stored.
package enum ExpressionJSONText {
    /// The text of `value`, charged to `meter`.
    package static func encode(_ value: JSONValue, at position: Int, _ meter: inout ExpressionMeter)
        throws(ExpressionError) -> String
    {
        var writer = JSONWriter()
        try write(value, to: &writer, at: position, &meter)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// A string as a JSON literal, cut short for error messages.
    package static func excerpt(_ text: String, limit: Int = 40) -> String {
        var output = ""
        let scalars = text.unicodeScalars
        if scalars.count <= limit {
            writeString(text, to: &output)
        } else {
            writeString(String(String.UnicodeScalarView(scalars.prefix(limit))), to: &output)
            output += "..."
        }
        return output
    }

    /// Appends `value`, charging a step per value, a step per `bytesPerStringStep` bytes of
    /// string, and every byte written (a string's before it is written; punctuation and
    /// numbers, a few bytes each, as they are written).
    package static func write(
        _ value: JSONValue, to writer: inout JSONWriter, at position: Int, _ meter: inout ExpressionMeter,
        depth: Int = 0
    ) throws(ExpressionError) {
        try meter.step(at: position)
        try meter.checkNesting(depth, at: position)
        let start = writer.bytes.count
        switch value {
        case .null: writer.append("null")
        case .bool(let flag): flag ? writer.append("true") : writer.append("false")
        case .number(let number): writer.writeNumber(number)
        case .string(let string): try writeString(string, to: &writer, at: position, &meter)
        case .array(let items):
            writer.append(UInt8(ascii: "["))
            for index in items.indices {
                if index > 0 { writer.append(UInt8(ascii: ",")) }
                try meter.bytes(1, at: position)
                try write(items[index], to: &writer, at: position, &meter, depth: depth + 1)
            }
            writer.append(UInt8(ascii: "]"))
            try meter.bytes(2, at: position)
            return
        case .object(let object):
            writer.append(UInt8(ascii: "{"))
            let members = object.members
            for index in members.indices {
                if index > 0 { writer.append(UInt8(ascii: ",")) }
                try meter.bytes(2, at: position)
                try writeString(members[index].key, to: &writer, at: position, &meter)
                writer.append(UInt8(ascii: ":"))
                try write(members[index].value, to: &writer, at: position, &meter, depth: depth + 1)
            }
            writer.append(UInt8(ascii: "}"))
            try meter.bytes(2, at: position)
            return
        }
        if case .string = value { return }
        try meter.bytes(writer.bytes.count - start, at: position)
    }

    /// A string literal: its bytes and quotes are charged before it is written, any escapes
    /// after.
    private static func writeString(
        _ string: String, to writer: inout JSONWriter, at position: Int, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) {
        let length = string.utf8.count
        try meter.stringSteps(length, at: position)
        try meter.bytes(length + 2, at: position)
        let start = writer.bytes.count
        writer.writeString(string)
        try meter.bytes(writer.bytes.count - start - length - 2, at: position)
    }

    package static func numberText(_ number: Double) -> String { JSONWriter.numberText(number) }

    package static func writeString(_ string: String, to output: inout String) {
        output += JSONWriter.stringLiteral(string)
    }
}
