/// A minimal compact JSON writer for `str(x)` and error messages.
///
/// The traversal is its own because it stops at a byte limit; strings and numbers are
/// written by `JSONWriter`'s rules. Numbers: an integral value within ±2^53
/// is written without a fraction (`2`, and `-0` as `0`); others in Swift's shortest
/// round-tripping form (`0.30000000000000004`, `1e+100`). Strings escape `"`, `\` and control
/// characters; other characters are written as UTF-8. Object members are written as stored.
enum ExpressionJSONText {
    static func encode(_ value: JSONValue) -> String {
        var output = ""
        _ = write(value, to: &output, limit: .max)
        return output
    }

    /// The text, or nil as soon as it passes `limit` UTF-8 bytes (so a value built from many
    /// references to one large input is not written out in full).
    static func encode(_ value: JSONValue, limit: Int) -> String? {
        var output = ""
        return write(value, to: &output, limit: limit) ? output : nil
    }

    /// A string as a JSON literal, cut short for error messages.
    static func excerpt(_ text: String, limit: Int = 40) -> String {
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

    /// Appends `value`; false once the output passes `limit` bytes.
    static func write(_ value: JSONValue, to output: inout String, limit: Int) -> Bool {
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .number(let number): output += numberText(number)
        case .string(let string): writeString(string, to: &output)
        case .array(let items):
            output += "["
            for (offset, item) in items.enumerated() {
                if offset > 0 { output += "," }
                guard write(item, to: &output, limit: limit) else { return false }
            }
            output += "]"
        case .object(let object):
            output += "{"
            for (offset, member) in object.members.enumerated() {
                if offset > 0 { output += "," }
                writeString(member.key, to: &output)
                output += ":"
                guard write(member.value, to: &output, limit: limit) else { return false }
            }
            output += "}"
        }
        return output.utf8.count <= limit
    }

    static func numberText(_ number: Double) -> String { JSONWriter.numberText(number) }

    static func writeString(_ string: String, to output: inout String) {
        output += JSONWriter.stringLiteral(string)
    }
}
