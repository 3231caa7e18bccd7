import RunnelJSON

/// The rule for values typed by a user: text that parses as JSON is that JSON; anything else
/// is sent as a JSON string. So `42`, `true`, `{"a":1}` and `"quoted"` are JSON, while
/// `hello world` becomes `"hello world"`.
enum ValueArgument {
    /// The JSON to publish for `text`.
    static func json(from text: String) -> RawJSON {
        if let raw = try? RawJSON(validating: text) { return raw }
        return RawJSON(encoding: .string(text))
    }

    /// Writes the value for one stdin line (no terminator) into `request` as member `value`:
    /// the line's own bytes when they are JSON, else the line as a JSON string (invalid UTF-8
    /// repaired with U+FFFD).
    static func appendValue(line: UnsafeRawBufferPointer, to writer: inout JSONWriter) {
        if JSONValidator().isValid(line) {
            writer.append(raw: line)
        } else if line.allSatisfy({ $0 < 0x80 }) {
            writer.writeString(utf8: line)
        } else {
            writer.writeString(String(decoding: line, as: UTF8.self))
        }
    }

    /// Parses a JSON option (`--ops`, `--value`); a usage failure names the option.
    static func parse(_ text: String, option: String) throws(CLIFailure) -> JSONValue {
        do throws(JSONError) {
            return try JSONParser().parse(text)
        } catch {
            throw .usage("\(option) is not valid JSON: \(error)")
        }
    }
}
