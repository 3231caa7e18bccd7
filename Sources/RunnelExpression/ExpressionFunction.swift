import RunnelJSON

/// The expression language's built-in functions, resolved by name at compile time.
///
/// Choices where the protocol leaves room (all wrong-type arguments are `eval` errors):
/// - `len`: a string's count of Unicode scalars, an array's count, an object's count of
///   distinct keys.
/// - `round`: half away from zero (`round(2.5)` is 3, `round(-2.5)` is -3).
/// - `min`, `max`: two numbers.
/// - `str`: a string unchanged, anything else its compact JSON text.
/// - `num`: a number unchanged; a string holding one JSON number (JSON whitespace around it
///   allowed); `true` is 1 and `false` is 0; null, arrays and objects are errors.
/// - `lower`, `upper`: full Unicode case mapping.
/// - `contains(a, b)`: substring of a string (by Unicode scalars, no normalisation), element of
///   an array (structural equality), or key of an object (`b` a string).
/// - `startsWith`, `endsWith`: on strings, by Unicode scalars.
/// - `keys(o)`: an object's distinct keys in first-written order (not sorted).
/// - `has(x, k)`: whether `x[k]` would find something: an object's key (`k` a string) or an
///   array's index (`k` a number; negative counts from the end; a fraction is never found).
/// - `type(x)`: "null", "boolean", "number", "string", "array", "object".
/// - `now()`: seconds since the epoch, with a fraction, from the compiled expression's clock.
///
/// Each function charges the evaluation's `ExpressionMeter` for the items and string bytes it
/// visits and the bytes it builds, before doing the work when the cost is known up front.
package enum ExpressionFunction: CaseIterable, Sendable {
    case len, abs, floor, ceil, round, min, max, str, num, lower, upper
    case contains, startsWith, endsWith, keys, has, type, now

    package var name: String {
        switch self {
        case .len: return "len"
        case .abs: return "abs"
        case .floor: return "floor"
        case .ceil: return "ceil"
        case .round: return "round"
        case .min: return "min"
        case .max: return "max"
        case .str: return "str"
        case .num: return "num"
        case .lower: return "lower"
        case .upper: return "upper"
        case .contains: return "contains"
        case .startsWith: return "startsWith"
        case .endsWith: return "endsWith"
        case .keys: return "keys"
        case .has: return "has"
        case .type: return "type"
        case .now: return "now"
        }
    }

    package var arity: Int {
        switch self {
        case .now: return 0
        case .min, .max, .contains, .startsWith, .endsWith, .has: return 2
        default: return 1
        }
    }

    /// Whether two calls with equal arguments always give equal results (so a call on
    /// literals can be folded at compile time).
    package var isPure: Bool { self != .now }

    package static let byName: [String: ExpressionFunction] = Dictionary(
        uniqueKeysWithValues: allCases.map { ($0.name, $0) })

    /// Applies the function; arguments beyond its arity are `.null` and ignored.
    package func apply(
        _ first: JSONValue, _ second: JSONValue, at position: Int, clock: ExpressionClock,
        _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        func fail(_ what: String) -> ExpressionError {
            .eval("\(name)() \(what)", at: position)
        }
        func number(_ value: JSONValue) throws(ExpressionError) -> Double {
            guard case .number(let number) = value else { throw fail("needs a number, got \(value.typeName)") }
            return number
        }
        func string(_ value: JSONValue) throws(ExpressionError) -> String {
            guard case .string(let string) = value else { throw fail("needs a string, got \(value.typeName)") }
            return string
        }

        switch self {
        case .len:
            switch first {
            case .string(let string):
                try meter.stringSteps(string.utf8.count, at: position)
                return .number(Double(string.unicodeScalars.count))
            case .array(let array): return .number(Double(array.count))
            case .object(let object):
                try meter.hashSteps(object.members.count, at: position)
                return .number(Double(object.count))
            default: throw fail("needs a string, array or object, got \(first.typeName)")
            }
        case .abs: return .number(Swift.abs(try number(first)))
        case .floor: return .number(try number(first).rounded(.down))
        case .ceil: return .number(try number(first).rounded(.up))
        case .round: return .number(try number(first).rounded(.toNearestOrAwayFromZero))
        case .min: return .number(Swift.min(try number(first), try number(second)))
        case .max: return .number(Swift.max(try number(first), try number(second)))
        case .str:
            if case .string = first { return first }
            return .string(try ExpressionJSONText.encode(first, at: position, &meter))
        case .num:
            switch first {
            case .number: return first
            case .bool(let flag): return .number(flag ? 1 : 0)
            case .string(let text):
                try meter.stringSteps(text.utf8.count, at: position)
                guard let value = ExpressionNumberSyntax.parse(text) else {
                    throw fail("cannot read a number from \(ExpressionJSONText.excerpt(text))")
                }
                return .number(value)
            default: throw fail("needs a number, string or boolean, got \(first.typeName)")
            }
        case .lower, .upper:
            let text = try string(first)
            let length = text.utf8.count
            try meter.steps(length / ExpressionBudget.bytesPerCaseStep, at: position)
            try meter.bytes(length, at: position)
            let mapped = self == .lower ? text.lowercased() : text.uppercased()
            // Case mapping can lengthen a string (`ß` becomes `SS`): charge the difference.
            try meter.bytes(Swift.max(0, mapped.utf8.count - length), at: position)
            return .string(mapped)
        case .contains:
            switch (first, second) {
            case (.string(let haystack), .string(let needle)):
                try meter.stringSteps(haystack.utf8.count + 2 * needle.utf8.count, at: position)
                // The search builds a table of a machine word per byte of the needle.
                try meter.bytes(needle.utf8.count * (MemoryLayout<Int>.stride + 1), at: position)
                return .bool(ExpressionSubstring.contains(haystack, needle))
            case (.array(let array), _):
                for item in array {
                    try meter.step(at: position)
                    if try ExpressionEvaluator.equal(item, second, at: position, &meter) { return .bool(true) }
                }
                return .bool(false)
            case (.object(let object), .string(let key)):
                try meter.steps(object.members.count, at: position)
                return .bool(object[key] != nil)
            default: throw fail("cannot look for \(second.typeName) in \(first.typeName)")
            }
        case .startsWith:
            let text = try string(first).utf8
            let prefix = try string(second).utf8
            try meter.stringSteps(Swift.min(text.count, prefix.count), at: position)
            return .bool(text.starts(with: prefix))
        case .endsWith:
            let text = try string(first).utf8
            let suffix = try string(second).utf8
            try meter.stringSteps(Swift.min(text.count, suffix.count), at: position)
            return .bool(text.count >= suffix.count && text.suffix(suffix.count).elementsEqual(suffix))
        case .keys:
            guard case .object(let object) = first else { throw fail("needs an object, got \(first.typeName)") }
            try meter.hashSteps(object.members.count, at: position)
            try meter.items(object.members.count, at: position)
            return .array(object.keys.map { .string($0) })
        case .has:
            switch (first, second) {
            case (.object(let object), .string(let key)):
                try meter.steps(object.members.count, at: position)
                return .bool(object[key] != nil)
            case (.array(let array), .number(let index)):
                return .bool(ExpressionEvaluator.arrayPosition(index, count: array.count) != nil)
            default: throw fail("cannot look up \(second.typeName) in \(first.typeName)")
            }
        case .type: return .string(first.typeName)
        case .now: return .number(clock())
        }
    }
}
