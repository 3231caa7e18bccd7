import RunnelJSON

/// A function call; the parser has checked the argument count against the function's arity.
package final class ExpressionCallNode: ExpressionNode, @unchecked Sendable {
    package let function: ExpressionFunction
    package let arguments: [ExpressionNode]
    package let position: Int
    /// What `now()` reads: the compiled expression's clock.
    package let clock: ExpressionClock

    package init(
        _ function: ExpressionFunction, _ arguments: [ExpressionNode], at position: Int,
        clock: @escaping ExpressionClock
    ) {
        self.function = function
        self.arguments = arguments
        self.position = position
        self.clock = clock
    }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: position)
        let first = arguments.count > 0 ? try arguments[0].evaluate(input, bindings, &meter) : .null
        let second = arguments.count > 1 ? try arguments[1].evaluate(input, bindings, &meter) : .null
        return try function.apply(first, second, at: position, clock: clock, &meter)
    }

    package override var isFoldable: Bool { function.isPure && arguments.allSatisfy { $0.literalValue != nil } }
}
