/// `base.a[e]...`: member and index steps applied left to right, in a loop.
final class ExpressionPathNode: ExpressionNode, @unchecked Sendable {
    let base: ExpressionNode
    let steps: [ExpressionPathStep]

    init(_ base: ExpressionNode, _ steps: [ExpressionPathStep]) {
        self.base = base
        self.steps = steps
    }

    override func evaluate(
        _ input: JSONValue, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        var current = try base.evaluate(input, bindings, &meter)
        for step in steps {
            switch step {
            case .member(let key, let position):
                current = try ExpressionEvaluator.member(key, of: current, at: position, &meter)
            case .index(let keyNode, let position):
                // The index sees the same `.` as the path: `.a[.i]`.
                let key = try keyNode.evaluate(input, bindings, &meter)
                current = try ExpressionEvaluator.index(key, of: current, at: position, &meter)
            }
        }
        return current
    }

    override var isFoldable: Bool {
        base.literalValue != nil
            && steps.allSatisfy { step in
                if case .index(let key, _) = step { return key.literalValue != nil }
                return true
            }
    }
}
