import RunnelJSON

/// `base.a[e]...`: member and index steps applied left to right, in a loop.
///
/// A path from `.` reads a published value's bytes in place when the input is bytes
/// (`ExpressionInput.bytes`): each step skips to the member or item it names without building
/// anything, and only the value the path ends on is decoded. The steps follow the same rules
/// (`ExpressionEvaluator.member`, `index`) and charge the same steps as on a tree.
package final class ExpressionPathNode: ExpressionNode, @unchecked Sendable {
    package let base: ExpressionNode
    package let steps: [ExpressionPathStep]
    /// Whether the base is `.`, so the path can read the input's bytes.
    package let startsAtInput: Bool
    /// Whether the path is one member step (`.load`, the usual path), whose name and position
    /// `select` reads without looping over `steps` (whose elements it would retain and
    /// release). Not an optional: reading a name out of one retained and released it.
    private let isOneMember: Bool
    private let onlyMember: JSONMemberName
    private let onlyMemberPosition: Int

    package init(_ base: ExpressionNode, _ steps: [ExpressionPathStep]) {
        self.base = base
        self.steps = steps
        startsAtInput = base is ExpressionInputNode
        if steps.count == 1, case .member(let name, let position) = steps[0] {
            (isOneMember, onlyMember, onlyMemberPosition) = (true, name, position)
        } else {
            (isOneMember, onlyMember, onlyMemberPosition) = (false, ExpressionPathNode.noName, 0)
        }
    }

    /// The member's name when the path is one member step from `.` (`.load`); nil otherwise.
    package var onlyMemberOfInput: JSONMemberName? { startsAtInput && isOneMember ? onlyMember : nil }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        if startsAtInput, case .bytes(let bytes, _) = input {
            guard let found = try select(in: bytes, input, bindings, &meter) else { return .null }
            return try ExpressionInput.decoded(found, at: steps.last.map(\.position) ?? 0)
        }
        try meter.step(at: 0)
        let start = try base.evaluate(input, bindings, &meter)
        return try walk(from: start, input, bindings, &meter) ?? .null
    }

    /// The bytes of the value the path names in `bytes` (the input, which the path starts
    /// at), or nil for null; nothing is decoded but index keys. One member of a payload's
    /// bytes is looked up through the payload, which keeps an index of them.
    package func select(
        in bytes: JSONValueBytes, _ input: ExpressionInput, _ bindings: ExpressionBindings,
        _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValueBytes? {
        assert(startsAtInput)
        // The steps the tree form charges: this node's and its base's (`.`).
        try meter.steps(2, at: 0)
        if isOneMember {
            return try ExpressionEvaluator.member(onlyMember, of: bytes, at: onlyMemberPosition, &meter) { name in
                guard case .bytes(_, of: let payload) = input else { return nil }
                return Payload.member(named: name, in: bytes, of: payload)
            }
        }
        return try walk(from: bytes, input, bindings, &meter)
    }

    /// The steps applied to `start`, on a tree or on bytes alike; nil is null.
    @inline(__always)
    private func walk<Value: ExpressionPathValue>(
        from start: Value, _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> Value? {
        var current = start
        for (offset, step) in steps.enumerated() {
            guard let next = try apply(step, to: current, input, bindings, &meter) else {
                // Null from here on: the remaining steps still run, on null, for what their
                // keys cost and the errors they raise.
                for rest in steps[(offset + 1)...] {
                    let onNull = try apply(rest, to: JSONValue.null, input, bindings, &meter)
                    assert(onNull == nil, "a step on null gives null")
                }
                return nil
            }
            current = next
        }
        return current
    }

    @inline(__always)
    private func apply<Value: ExpressionPathValue>(
        _ step: ExpressionPathStep, to value: Value, _ input: ExpressionInput, _ bindings: ExpressionBindings,
        _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> Value? {
        switch step {
        case .member(let key, let position):
            return try ExpressionEvaluator.member(key, of: value, at: position, &meter)
        case .index(let keyNode, let position):
            // The index sees the same `.` as the path: `.a[.i]`.
            let key = try keyNode.evaluate(input, bindings, &meter)
            return try ExpressionEvaluator.index(key, of: value, at: position, &meter)
        }
    }

    /// `onlyMember` of a path that is not one member step.
    private static let noName = JSONMemberName("")

    package override var isFoldable: Bool {
        base.literalValue != nil
            && steps.allSatisfy { step in
                if case .index(let key, _) = step { return key.literalValue != nil }
                return true
            }
    }
}

extension ExpressionPathStep {
    /// Where the step was written.
    package var position: Int {
        switch self {
        case .member(_, let position), .index(_, let position): return position
        }
    }
}
