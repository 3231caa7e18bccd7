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
enum ExpressionJSONText {
    /// The text of `value`, charged to `meter`.
    static func encode(_ value: JSONValue, at position: Int, _ meter: inout ExpressionMeter)
        throws(ExpressionError) -> String
    {
        var output = ""
        try write(value, to: &output, at: position, &meter)
        return output
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

    /// Appends `value`, charging a step per value, a step per `bytesPerStringStep` bytes of
    /// string, and every byte written.
    static func write(
        _ value: JSONValue, to output: inout String, at position: Int, _ meter: inout ExpressionMeter,
        depth: Int = 0
    ) throws(ExpressionError) {
        try meter.step(at: position)
        try meter.checkNesting(depth, at: position)
        switch value {
        case .null: try put("null", to: &output, at: position, &meter)
        case .bool(let flag): try put(flag ? "true" : "false", to: &output, at: position, &meter)
        case .number(let number): try put(numberText(number), to: &output, at: position, &meter)
        case .string(let string): try putString(string, to: &output, at: position, &meter)
        case .array(let items):
            try put("[", to: &output, at: position, &meter)
            for (offset, item) in items.enumerated() {
                if offset > 0 { try put(",", to: &output, at: position, &meter) }
                try write(item, to: &output, at: position, &meter, depth: depth + 1)
            }
            try put("]", to: &output, at: position, &meter)
        case .object(let object):
            try put("{", to: &output, at: position, &meter)
            for (offset, member) in object.members.enumerated() {
                if offset > 0 { try put(",", to: &output, at: position, &meter) }
                try putString(member.key, to: &output, at: position, &meter)
                try put(":", to: &output, at: position, &meter)
                try write(member.value, to: &output, at: position, &meter, depth: depth + 1)
            }
            try put("}", to: &output, at: position, &meter)
        }
    }

    private static func put(
        _ text: String, to output: inout String, at position: Int, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) {
        try meter.bytes(text.utf8.count, at: position)
        output += text
    }

    /// A string literal: its bytes and quotes are charged before it is escaped, any escapes
    /// after.
    private static func putString(
        _ string: String, to output: inout String, at position: Int, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) {
        let length = string.utf8.count
        try meter.stringSteps(length, at: position)
        try meter.bytes(length + 2, at: position)
        let literal = JSONWriter.stringLiteral(string)
        try meter.bytes(literal.utf8.count - length - 2, at: position)
        output += literal
    }

    static func numberText(_ number: Double) -> String { JSONWriter.numberText(number) }

    static func writeString(_ string: String, to output: inout String) {
        output += JSONWriter.stringLiteral(string)
    }
}
