import RunnelJSON

/// The compiled form of an expression: a tree of small immutable node objects whose variables
/// are resolved to slots and whose functions are resolved to `ExpressionFunction` ids, so
/// evaluating does no lookups by name. Each node kind evaluates itself (one virtual call per
/// node, with a small stack frame; the parser bounds the depth).
///
/// Left-associative chains (`a + b - c`, `a && b && c`) and path steps (`.a.b[0]`) are stored
/// flat and evaluated in a loop, so the tree is only as deep as the expression's real nesting.
///
/// Every node charges one step of the evaluation's `ExpressionMeter`; operations whose work
/// grows with the values charge more (see `ExpressionBudget`).
///
/// Thread safety: nodes are immutable after construction (every stored property is a `let`
/// of a `Sendable` type), so one tree may be evaluated from many threads at once; that is
/// why the non-final base class can be `@unchecked Sendable`.
package class ExpressionNode: @unchecked Sendable {
    /// The node's value for `input` under `bindings`.
    package func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        preconditionFailure("ExpressionNode is abstract")
    }

    /// The value, when the node is a literal.
    package var literalValue: JSONValue? { nil }

    /// Whether every operand is a literal and the result depends on nothing else, so the parser
    /// may evaluate the node once and replace it with a literal.
    package var isFoldable: Bool { false }

    // Factories named like the grammar's constructs, for the parser.

    package static func literal(_ value: JSONValue) -> ExpressionNode { ExpressionLiteralNode(value) }
    package static var input: ExpressionNode { ExpressionInputNode() }
    package static func variable(_ variable: ExpressionVariable) -> ExpressionNode { ExpressionVariableNode(variable) }
    package static func path(_ base: ExpressionNode, _ steps: [ExpressionPathStep]) -> ExpressionNode {
        ExpressionPathNode(base, steps)
    }
    package static func array(_ items: [ExpressionNode]) -> ExpressionNode { ExpressionArrayNode(items) }
    package static func object(_ members: [ExpressionObjectMember]) -> ExpressionNode { ExpressionObjectNode(members) }
    package static func negate(_ operand: ExpressionNode, at position: Int) -> ExpressionNode {
        ExpressionNegateNode(operand, at: position)
    }
    package static func not(_ operand: ExpressionNode) -> ExpressionNode { ExpressionNotNode(operand) }
    package static func chain(_ first: ExpressionNode, _ steps: [ExpressionBinaryStep]) -> ExpressionNode {
        ExpressionChainNode(first, steps)
    }
    package static func and(_ operands: [ExpressionNode]) -> ExpressionNode { ExpressionAndNode(operands) }
    package static func or(_ operands: [ExpressionNode]) -> ExpressionNode { ExpressionOrNode(operands) }
    package static func conditional(
        _ condition: ExpressionNode, _ then: ExpressionNode, _ otherwise: ExpressionNode
    ) -> ExpressionNode {
        ExpressionConditionalNode(condition, then, otherwise)
    }
}

/// A literal, or a constant subexpression folded at compile time.
package final class ExpressionLiteralNode: ExpressionNode, @unchecked Sendable {
    package let value: JSONValue

    package init(_ value: JSONValue) { self.value = value }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        return value
    }
    package override var literalValue: JSONValue? { value }
}

/// `.`: the value being evaluated, whole (decoded, when it is read from bytes). As the base
/// of a path it is not evaluated: the path reads the input itself (`ExpressionPathNode`).
package final class ExpressionInputNode: ExpressionNode, @unchecked Sendable {
    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        return try input.tree(at: 0)
    }
}

/// `$acc`, `$index`, `$prev`, `$subject`, `$key`, `$0`...`$9`.
package final class ExpressionVariableNode: ExpressionNode, @unchecked Sendable {
    package let variable: ExpressionVariable

    package init(_ variable: ExpressionVariable) { self.variable = variable }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        switch variable {
        case .acc: return bindings.acc
        case .index: return .number(Double(bindings.index))
        case .prev: return bindings.prev
        case .subject: return bindings.subject.map { .string($0) } ?? .null
        case .key: return bindings.key.map { .string($0) } ?? .null
        case .item(let position): return position < bindings.items.count ? bindings.items[position] : .null
        }
    }
}

/// A variable, resolved at compile time.
package enum ExpressionVariable: Sendable, Equatable {
    case acc, index, prev, subject, key
    /// `$0`...`$9`.
    case item(Int)
}

/// One step of a path.
package enum ExpressionPathStep: Sendable {
    /// `.name` or `.["name"]` with a literal key.
    case member(JSONMemberName, at: Int)
    /// `[e]`: a number indexes an array, a string an object.
    case index(ExpressionNode, at: Int)
}

/// One member of an object literal.
package struct ExpressionObjectMember: Sendable {
    package let key: String
    package let value: ExpressionNode
}

/// One `op operand` link of a binary chain, with the operator's position for errors.
package struct ExpressionBinaryStep: Sendable {
    package let op: ExpressionBinaryOperator
    package let operand: ExpressionNode
    package let position: Int
}

/// The binary operators other than `&&` and `||`.
package enum ExpressionBinaryOperator: Sendable {
    case add, subtract, multiply, divide, remainder
    case equal, notEqual, less, lessEqual, greater, greaterEqual

    /// The comparison that gives the same result with the operands swapped (`a < b` is
    /// `b > a`; `==` and `!=` are their own); nil for the arithmetic operators.
    package var mirrored: ExpressionBinaryOperator? {
        switch self {
        case .less: return .greater
        case .lessEqual: return .greaterEqual
        case .greater: return .less
        case .greaterEqual: return .lessEqual
        case .equal, .notEqual: return self
        case .add, .subtract, .multiply, .divide, .remainder: return nil
        }
    }

    package var symbol: String {
        switch self {
        case .add: return "+"
        case .subtract: return "-"
        case .multiply: return "*"
        case .divide: return "/"
        case .remainder: return "%"
        case .equal: return "=="
        case .notEqual: return "!="
        case .less: return "<"
        case .lessEqual: return "<="
        case .greater: return ">"
        case .greaterEqual: return ">="
        }
    }
}
