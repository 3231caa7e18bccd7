/// Evaluates a compiled tree against one value and its bindings.
///
/// A value type built per evaluation; it holds no state between calls. Recursion follows the
/// tree, whose depth the parser bounds; chains and paths are walked in loops.
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
struct ExpressionEvaluator {
    let input: JSONValue
    let bindings: ExpressionBindings
    let clock: ExpressionClock

    /// The largest string (UTF-8 bytes) or array (items) that `+` may build.
    static let maxBuiltLength = 16 * 1024 * 1024

    /// Dispatches on the node; each kind is evaluated by its own small function so that the
    /// frame recursion repeats per nesting level stays small (unoptimised builds give one big
    /// switch a frame of several KiB).
    func evaluate(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        // Cases pass the node on whole: binding each payload here would give this frame, which
        // recursion repeats, a slot for every case's payload.
        switch node {
        case .literal(let value): return value
        case .input: return input
        case .variable: return variable(node)
        case .path: return try path(node)
        case .array: return try array(node)
        case .object: return try object(node)
        case .negate: return try negate(node)
        case .not: return try not(node)
        case .chain: return try chain(node)
        case .and: return try and(node)
        case .or: return try or(node)
        case .conditional: return try conditional(node)
        case .call: return try call(node)
        }
    }

    @inline(never)
    private func not(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .not(let operand) = node else { preconditionFailure() }
        return .bool(!(try evaluate(operand).isTruthy))
    }

    @inline(never)
    private func conditional(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .conditional(let condition, let then, let otherwise) = node else { preconditionFailure() }
        return try evaluate(try evaluate(condition).isTruthy ? then : otherwise)
    }

    @inline(never)
    private func variable(_ node: ExpressionNode) -> JSONValue {
        guard case .variable(let variable) = node else { preconditionFailure() }
        return value(of: variable)
    }

    @inline(never)
    private func path(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .path(let base, let steps) = node else { preconditionFailure() }
        var current = try evaluate(base)
        for step in steps {
            switch step {
            case .member(let key, let position):
                current = try Self.member(key, of: current, at: position)
            case .index(let keyNode, let position):
                current = try Self.index(try evaluate(keyNode), of: current, at: position)
            }
        }
        return current
    }

    @inline(never)
    private func array(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .array(let items) = node else { preconditionFailure() }
        var values: [JSONValue] = []
        values.reserveCapacity(items.count)
        for item in items { values.append(try evaluate(item)) }
        return .array(values)
    }

    @inline(never)
    private func object(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .object(let members) = node else { preconditionFailure() }
        // A repeated key keeps its first position and its last value, as in jq.
        var built: [(key: String, value: JSONValue)] = []
        built.reserveCapacity(members.count)
        for member in members {
            let value = try evaluate(member.value)
            if let earlier = built.firstIndex(where: { $0.key == member.key }) {
                built[earlier].value = value
            } else {
                built.append((member.key, value))
            }
        }
        return .object(JSONObject(built))
    }

    @inline(never)
    private func negate(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .negate(let operand, let position) = node else { preconditionFailure() }
        let value = try evaluate(operand)
        guard case .number(let number) = value else {
            throw .eval("cannot negate \(value.typeName)", at: position)
        }
        return .number(-number)
    }

    @inline(never)
    private func chain(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .chain(let first, let steps) = node else { preconditionFailure() }
        var value = try evaluate(first)
        for step in steps {
            try Self.combine(&value, step.op, try evaluate(step.operand), at: step.position)
        }
        return value
    }

    @inline(never)
    private func and(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .and(let operands) = node else { preconditionFailure() }
        for operand in operands where !(try evaluate(operand).isTruthy) { return .bool(false) }
        return .bool(true)
    }

    @inline(never)
    private func or(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .or(let operands) = node else { preconditionFailure() }
        for operand in operands where try evaluate(operand).isTruthy { return .bool(true) }
        return .bool(false)
    }

    @inline(never)
    private func call(_ node: ExpressionNode) throws(ExpressionError) -> JSONValue {
        guard case .call(let function, let arguments, let position) = node else { preconditionFailure() }
        let first = arguments.count > 0 ? try evaluate(arguments[0]) : .null
        let second = arguments.count > 1 ? try evaluate(arguments[1]) : .null
        return try function.apply(first, second, at: position, clock: clock)
    }

    private func value(of variable: ExpressionVariable) -> JSONValue {
        switch variable {
        case .acc: return bindings.acc
        case .index: return .number(Double(bindings.index))
        case .prev: return bindings.prev
        case .subject: return bindings.subject.map { .string($0) } ?? .null
        case .item(let position): return position < bindings.items.count ? bindings.items[position] : .null
        }
    }

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
