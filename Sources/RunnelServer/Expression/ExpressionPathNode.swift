/// `base.a[e]...`: member and index steps applied left to right, in a loop.
final class ExpressionPathNode: ExpressionNode, @unchecked Sendable {
    let base: ExpressionNode
    let steps: [ExpressionPathStep]

    init(_ base: ExpressionNode, _ steps: [ExpressionPathStep]) {
        self.base = base
        self.steps = steps
    }

    override func evaluate(_ input: JSONValue, _ bindings: ExpressionBindings) throws(ExpressionError) -> JSONValue {
        var current = try base.evaluate(input, bindings)
        for step in steps {
            switch step {
            case .member(let key, let position):
                current = try ExpressionEvaluator.member(key, of: current, at: position)
            case .index(let keyNode, let position):
                // The index sees the same `.` as the path: `.a[.i]`.
                current = try ExpressionEvaluator.index(
                    try keyNode.evaluate(input, bindings), of: current, at: position)
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
