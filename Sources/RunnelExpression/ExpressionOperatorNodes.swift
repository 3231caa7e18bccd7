import RunnelJSON

/// Prefix `-`: numbers only.
package final class ExpressionNegateNode: ExpressionNode, @unchecked Sendable {
    package let operand: ExpressionNode
    package let position: Int

    package init(_ operand: ExpressionNode, at position: Int) {
        self.operand = operand
        self.position = position
    }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: position)
        let value = try operand.evaluate(input, bindings, &meter)
        guard case .number(let number) = value else { throw .eval("cannot negate \(value.typeName)", at: position) }
        return .number(-number)
    }

    package override var isFoldable: Bool { operand.literalValue != nil }
}

/// Prefix `!`: the negated truthiness.
package final class ExpressionNotNode: ExpressionNode, @unchecked Sendable {
    package let operand: ExpressionNode

    package init(_ operand: ExpressionNode) { self.operand = operand }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        return .bool(!(try operand.evaluate(input, bindings, &meter).isTruthy))
    }

    package override var isFoldable: Bool { operand.literalValue != nil }
}

/// `first op operand op operand ...` for one precedence level of binary operators.
package final class ExpressionChainNode: ExpressionNode, @unchecked Sendable {
    package let first: ExpressionNode
    package let steps: [ExpressionBinaryStep]
    /// The first step's parts, which `evaluate` reads as fields: taking them out of `steps`
    /// retained and released the operand, and most chains (`.load > 0.9`) have one step.
    private let firstOperand: ExpressionNode
    private let firstOperator: ExpressionBinaryOperator
    private let firstPosition: Int

    package init(_ first: ExpressionNode, _ steps: [ExpressionBinaryStep]) {
        precondition(!steps.isEmpty, "a chain has at least one operator")
        self.first = first
        self.steps = steps
        (firstOperand, firstOperator, firstPosition) = (steps[0].operand, steps[0].op, steps[0].position)
    }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: firstPosition)
        var value = try first.evaluate(input, bindings, &meter)
        // Whether `value` is a string or array this chain built (and so may append to in place).
        var owned = false
        let operand = try firstOperand.evaluate(input, bindings, &meter)
        try ExpressionEvaluator.combine(&value, firstOperator, operand, owned: &owned, at: firstPosition, &meter)
        guard steps.count > 1 else { return value }
        for step in steps.dropFirst() {
            let operand = try step.operand.evaluate(input, bindings, &meter)
            try ExpressionEvaluator.combine(&value, step.op, operand, owned: &owned, at: step.position, &meter)
        }
        return value
    }

    package override var isFoldable: Bool {
        first.literalValue != nil && steps.allSatisfy { $0.operand.literalValue != nil }
    }
}

/// `a && b && ...`: short-circuit on truthiness; the result is a boolean.
package final class ExpressionAndNode: ExpressionNode, @unchecked Sendable {
    package let operands: [ExpressionNode]

    package init(_ operands: [ExpressionNode]) { self.operands = operands }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        for operand in operands where !(try operand.evaluate(input, bindings, &meter).isTruthy) { return .bool(false) }
        return .bool(true)
    }

    package override var isFoldable: Bool { operands.allSatisfy { $0.literalValue != nil } }
}

/// `a || b || ...`: short-circuit on truthiness; the result is a boolean.
package final class ExpressionOrNode: ExpressionNode, @unchecked Sendable {
    package let operands: [ExpressionNode]

    package init(_ operands: [ExpressionNode]) { self.operands = operands }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        for operand in operands where try operand.evaluate(input, bindings, &meter).isTruthy { return .bool(true) }
        return .bool(false)
    }

    package override var isFoldable: Bool { operands.allSatisfy { $0.literalValue != nil } }
}

/// `c ? a : b`: only the chosen branch is evaluated.
package final class ExpressionConditionalNode: ExpressionNode, @unchecked Sendable {
    package let condition: ExpressionNode
    package let then: ExpressionNode
    package let otherwise: ExpressionNode

    package init(_ condition: ExpressionNode, _ then: ExpressionNode, _ otherwise: ExpressionNode) {
        self.condition = condition
        self.then = then
        self.otherwise = otherwise
    }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        let branch = try condition.evaluate(input, bindings, &meter).isTruthy ? then : otherwise
        return try branch.evaluate(input, bindings, &meter)
    }

    package override var isFoldable: Bool {
        condition.literalValue != nil && then.literalValue != nil && otherwise.literalValue != nil
    }
}
