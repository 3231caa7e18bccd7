/// The semantics the node classes share: path steps and binary operators.
///
/// Choices where the protocol leaves room:
/// - `.a` on null is null, on an object its member or null, on anything else an `eval` error.
/// - `[k]` on null is null (for a number or string `k`); on an array a number indexes it
///   (negative counts from the end; out of range or fractional gives null); on an object a
///   string names a member; any other pairing is an `eval` error. An index expression sees the
///   same `.` as the path it belongs to (`.a[.i]`).
/// - `&&` and `||` test truthiness, short-circuit, and give a boolean.
/// - `%` is the truncating remainder (sign of the dividend: `-7 % 2` is -1); by zero it is an
///   error, like `/`. Any non-finite result is an error.
/// - `< <= > >=` order strings by Unicode scalar values (UTF-8 bytes), not by locale.
/// - Strings and arrays built by `+` (and the text of `str`) are limited to `maxBuiltLength`
///   UTF-8 bytes / items, so a short expression cannot blow up memory.
enum ExpressionEvaluator {
    /// The largest string (UTF-8 bytes) or array (items) that `+` may build.
    static let maxBuiltLength = 16 * 1024 * 1024

    // MARK: Paths

    static func member(_ key: String, of value: JSONValue, at position: Int) throws(ExpressionError) -> JSONValue {
        switch value {
        case .object(let object): return object[key] ?? .null
        case .null: return .null
        default:
            throw .eval("cannot read member \(ExpressionJSONText.excerpt(key)) of \(value.typeName)", at: position)
        }
    }

    static func index(_ key: JSONValue, of value: JSONValue, at position: Int) throws(ExpressionError) -> JSONValue {
        switch (value, key) {
        case (.array(let items), .number(let number)):
            guard let offset = arrayPosition(number, count: items.count) else { return .null }
            return items[offset]
        case (.object(let object), .string(let name)):
            return object[name] ?? .null
        case (.null, .number), (.null, .string):
            return .null
        default:
            throw .eval("cannot index \(value.typeName) with \(key.typeName)", at: position)
        }
    }

    /// The array offset that `number` names: integral, negative counting from the end; nil
    /// when out of range or fractional.
    static func arrayPosition(_ number: Double, count: Int) -> Int? {
        guard number.rounded(.towardZero) == number else { return nil }
        let resolved = number < 0 ? number + Double(count) : number
        guard resolved >= 0, resolved < Double(count) else { return nil }
        return Int(resolved)
    }

    // MARK: Operators

    /// `lhs = lhs op rhs`, in place so that a chain of string or array `+` appends to one
    /// buffer instead of copying it at every step.
    static func combine(
        _ lhs: inout JSONValue, _ op: ExpressionBinaryOperator, _ rhs: JSONValue, at position: Int
    ) throws(ExpressionError) {
        switch op {
        case .equal:
            lhs = .bool(lhs == rhs)
            return
        case .notEqual:
            lhs = .bool(lhs != rhs)
            return
        case .add:
            if case .string(var text) = lhs, case .string(let tail) = rhs {
                guard text.utf8.count + tail.utf8.count <= maxBuiltLength else {
                    throw .eval("string longer than \(maxBuiltLength) bytes", at: position)
                }
                lhs = .null  // leaves `text` uniquely referenced, so it grows in place
                text += tail
                lhs = .string(text)
                return
            }
            if case .array(var items) = lhs, case .array(let tail) = rhs {
                guard items.count + tail.count <= maxBuiltLength else {
                    throw .eval("array longer than \(maxBuiltLength) items", at: position)
                }
                lhs = .null
                items += tail
                lhs = .array(items)
                return
            }
        case .less, .lessEqual, .greater, .greaterEqual:
            if case .number(let left) = lhs, case .number(let right) = rhs {
                lhs = .bool(compare(op, left < right, left == right))
                return
            }
            if case .string(let left) = lhs, case .string(let right) = rhs {
                let less = left.utf8.lexicographicallyPrecedes(right.utf8)
                let equal = !less && !right.utf8.lexicographicallyPrecedes(left.utf8)
                lhs = .bool(compare(op, less, equal))
                return
            }
        case .subtract, .multiply, .divide, .remainder:
            break
        }
        guard case .number(let left) = lhs, case .number(let right) = rhs else {
            throw .eval("cannot apply '\(op.symbol)' to \(lhs.typeName) and \(rhs.typeName)", at: position)
        }
        let result: Double
        switch op {
        case .add: result = left + right
        case .subtract: result = left - right
        case .multiply: result = left * right
        case .divide, .remainder:
            guard right != 0 else { throw .eval("division by zero", at: position) }
            result = op == .divide ? left / right : left.truncatingRemainder(dividingBy: right)
        default: throw .eval("cannot apply '\(op.symbol)' to numbers", at: position)
        }
        guard result.isFinite else { throw .eval("'\(op.symbol)' result out of range", at: position) }
        lhs = .number(result)
    }

    private static func compare(_ op: ExpressionBinaryOperator, _ less: Bool, _ equal: Bool) -> Bool {
        switch op {
        case .less: return less
        case .lessEqual: return less || equal
        case .greater: return !less && !equal
        default: return !less
        }
    }
}
