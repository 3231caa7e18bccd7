import RunnelJSON

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
/// - Work and memory are metered (`ExpressionMeter`): a lookup in an object pays for its
///   members, `+` on strings and arrays pays for what it copies (only the appended part when it
///   extends a string or array the same chain built), `==` and `!=` pay for what they compare.
package enum ExpressionEvaluator {
    // MARK: Paths

    // Each rule is written once, generic over what it reads: a decoded tree (`JSONValue`) or a
    // published value's bytes read in place (`JSONValueBytes`). nil is null: a missing member,
    // an index out of range, or a step on null.

    /// `lookup`: how the object's last member named `name` is found (and its members counted),
    /// when not by scanning it (a `Payload` keeps an index of its members).
    @inline(__always)
    package static func member<Value: ExpressionPathValue>(
        _ name: JSONMemberName, of value: Value, at position: Int, _ meter: inout ExpressionMeter,
        lookup: (JSONMemberName) -> (value: Value?, memberCount: Int)? = { _ in nil }
    ) throws(ExpressionError) -> Value? {
        switch value.kind {
        case .object:
            let (found, memberCount) = lookup(name) ?? value.lastMember(named: name)
            try meter.steps(memberCount, at: position)
            return found
        case .null: return nil
        default:
            throw .eval(
                "cannot read member \(ExpressionJSONText.excerpt(name.string)) of \(value.kind.typeName)", at: position)
        }
    }

    package static func index<Value: ExpressionPathValue>(
        _ key: JSONValue, of value: Value, at position: Int, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> Value? {
        switch (value.kind, key) {
        case (.array, .number(let number)):
            guard let offset = arrayPosition(number, count: value.elementCount) else { return nil }
            return value.element(at: offset)
        case (.object, .string(let name)):
            let (found, memberCount) = value.lastMember(named: name)
            try meter.steps(memberCount, at: position)
            return found
        case (.null, .number), (.null, .string):
            return nil
        default:
            throw .eval("cannot index \(value.kind.typeName) with \(key.typeName)", at: position)
        }
    }

    /// The array offset that `number` names: integral, negative counting from the end; nil
    /// when out of range or fractional.
    package static func arrayPosition(_ number: Double, count: Int) -> Int? {
        guard number.rounded(.towardZero) == number else { return nil }
        let resolved = number < 0 ? number + Double(count) : number
        guard resolved >= 0, resolved < Double(count) else { return nil }
        return Int(resolved)
    }

    // MARK: Operators

    /// `lhs = lhs op rhs`, in place so that a chain of string or array `+` appends to one
    /// buffer instead of copying it at every step. `owned` says whether `lhs` is a string or
    /// array that an earlier `+` of the same chain built: appending to it then copies (and
    /// charges) only `rhs`; otherwise the whole result is charged. The cost is charged before
    /// anything is built.
    @inline(__always)  // its one caller is the chain node's loop
    package static func combine(
        _ lhs: inout JSONValue, _ op: ExpressionBinaryOperator, _ rhs: JSONValue, owned: inout Bool,
        at position: Int, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) {
        let wasOwned = owned
        owned = false
        switch op {
        case .equal:
            lhs = .bool(try equal(lhs, rhs, at: position, &meter))
            return
        case .notEqual:
            lhs = .bool(!(try equal(lhs, rhs, at: position, &meter)))
            return
        case .add:
            if case .string(var text) = lhs, case .string(let tail) = rhs {
                let copied = tail.utf8.count + (wasOwned ? 0 : text.utf8.count)
                try meter.stringSteps(copied, at: position)
                try meter.bytes(copied, at: position)
                lhs = .null  // leaves `text` uniquely referenced, so it grows in place
                text += tail
                lhs = .string(text)
                owned = true
                return
            }
            if case .array(var items) = lhs, case .array(let tail) = rhs {
                let copied = tail.count + (wasOwned ? 0 : items.count)
                try meter.steps(copied, at: position)
                try meter.items(copied, at: position)
                lhs = .null
                items += tail
                lhs = .array(items)
                owned = true
                return
            }
        case .less, .lessEqual, .greater, .greaterEqual:
            if case .number(let left) = lhs, case .number(let right) = rhs {
                lhs = .bool(compare(left, op, right))
                return
            }
            if case .string(let left) = lhs, case .string(let right) = rhs {
                try meter.stringSteps(2 * Swift.min(left.utf8.count, right.utf8.count), at: position)
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

    /// `left op right` for two numbers, `op` an ordering (`<` ... `>=`) or `==`, `!=`.
    @inline(__always)
    package static func compare(_ left: Double, _ op: ExpressionBinaryOperator, _ right: Double) -> Bool {
        switch op {
        case .equal: return left == right
        case .notEqual: return left != right
        default: return compare(op, left < right, left == right)
        }
    }

    private static func compare(_ op: ExpressionBinaryOperator, _ less: Bool, _ equal: Bool) -> Bool {
        switch op {
        case .less: return less
        case .lessEqual: return less || equal
        case .greater: return !less && !equal
        default: return !less
        }
    }

    // MARK: Equality

    /// Structural equality, as `JSONValue.==` (numbers by value, objects by their distinct
    /// keys whatever the order, the last member of a repeated key counting), paying a step
    /// for every value compared and for the strings' bytes. Two sides that share storage are
    /// still compared item by item: the steps depend on the values only, never on whether the
    /// input was a tree (where `.` gives one storage twice) or bytes (decoded per use).
    package static func equal(
        _ lhs: JSONValue, _ rhs: JSONValue, at position: Int, _ meter: inout ExpressionMeter, depth: Int = 0
    ) throws(ExpressionError) -> Bool {
        try meter.step(at: position)
        try meter.checkNesting(depth, at: position)
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let left), .bool(let right)): return left == right
        case (.number(let left), .number(let right)): return left == right
        case (.string(let left), .string(let right)):
            let length = left.utf8.count
            guard length == right.utf8.count else { return false }
            try meter.stringSteps(length, at: position)
            return left == right
        case (.array(let left), .array(let right)):
            guard left.count == right.count else { return false }
            for index in left.indices {
                guard try equal(left[index], right[index], at: position, &meter, depth: depth + 1) else { return false }
            }
            return true
        case (.object(let left), .object(let right)):
            let leftMembers = left.members
            let rightMembers = right.members
            if leftMembers.count == rightMembers.count {
                // The usual case: the same keys in the same order, compared pairwise. Equal
                // pairs mean equal objects; any difference is settled by key below (a repeated
                // key's earlier value does not count).
                var pairwiseEqual = true
                for index in leftMembers.indices {
                    let (leftKey, leftValue) = leftMembers[index]
                    let (rightKey, rightValue) = rightMembers[index]
                    try meter.step(at: position)
                    try meter.stringSteps(leftKey.utf8.count, at: position)
                    guard leftKey == rightKey,
                        try equal(leftValue, rightValue, at: position, &meter, depth: depth + 1)
                    else {
                        pairwiseEqual = false
                        break
                    }
                }
                if pairwiseEqual { return true }
            }
            try meter.hashSteps(leftMembers.count + rightMembers.count, at: position)
            let leftByKey = lastMembers(left)
            let rightByKey = lastMembers(right)
            guard leftByKey.count == rightByKey.count else { return false }
            for (key, value) in leftByKey {
                guard let other = rightByKey[key] else { return false }
                guard try equal(value, other, at: position, &meter, depth: depth + 1) else {
                    return false
                }
            }
            return true
        default: return false
        }
    }

    /// An object's members by key, the last of a repeated key winning.
    private static func lastMembers(_ object: JSONObject) -> [String: JSONValue] {
        Dictionary(object.members.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
    }
}
