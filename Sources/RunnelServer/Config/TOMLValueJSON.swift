import RunnelJSON
import TOMLKit

/// Renders a TOML value as JSON text, for a behavior subject's initial `value`.
///
/// Tables become objects (keys in the order TOMLKit lists them), arrays arrays, integers and
/// finite floats numbers, dates and times their TOML text as strings (JSON has no date type).
/// NaN and infinities have no JSON form and are refused. Pure; call it while the parsed root
/// table is alive (TOMLKit's nodes point into it).
enum TOMLValueJSON {
    /// The JSON text of `value`, or a problem description.
    static func render(_ value: any TOMLValueConvertible) -> Result<String, ConfigValueProblem> {
        var output = ""
        if let problem = append(value, to: &output) { return .failure(problem) }
        return .success(output)
    }

    private static func append(_ value: any TOMLValueConvertible, to output: inout String) -> ConfigValueProblem? {
        switch value.type {
        case .table:
            guard let table = value.table else { return ConfigValueProblem("unreadable table") }
            output += "{"
            var first = true
            for (key, member) in table {
                if !first { output += "," }
                first = false
                appendString(key, to: &output)
                output += ":"
                if let problem = append(member, to: &output) { return problem }
            }
            output += "}"
        case .array:
            guard let array = value.array else { return ConfigValueProblem("unreadable array") }
            output += "["
            var first = true
            for element in array {
                if !first { output += "," }
                first = false
                if let problem = append(element, to: &output) { return problem }
            }
            output += "]"
        case .string:
            appendString(value.string ?? "", to: &output)
        case .int:
            output += String(value.int ?? 0)
        case .double:
            let number = value.double ?? 0
            guard number.isFinite else {
                return ConfigValueProblem("\(number) has no JSON form; use a finite number")
            }
            // By the protocol's number rules: integral doubles print as integers (1.0 -> 1).
            output += JSONWriter.numberText(number)
        case .bool:
            output += (value.bool ?? false) ? "true" : "false"
        case .date, .time, .dateTime:
            appendString(value.debugDescription, to: &output)
        }
        return nil
    }

    /// Appends `text` as a JSON string literal.
    static func appendString(_ text: String, to output: inout String) {
        output += JSONWriter.stringLiteral(text)
    }
}

/// A value-level problem found while converting; the caller adds origin and key.
struct ConfigValueProblem: Error, Equatable {
    let text: String
    init(_ text: String) { self.text = text }
}
