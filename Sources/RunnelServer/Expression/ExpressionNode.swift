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
class ExpressionNode: @unchecked Sendable {
    /// The node's value for `input` under `bindings`.
    func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        preconditionFailure("ExpressionNode is abstract")
    }

    /// The value, when the node is a literal.
    var literalValue: JSONValue? { nil }

    /// Whether every operand is a literal and the result depends on nothing else, so the parser
    /// may evaluate the node once and replace it with a literal.
    var isFoldable: Bool { false }

    // Factories named like the grammar's constructs, for the parser.

    static func literal(_ value: JSONValue) -> ExpressionNode { ExpressionLiteralNode(value) }
    static var input: ExpressionNode { ExpressionInputNode() }
    static func variable(_ variable: ExpressionVariable) -> ExpressionNode { ExpressionVariableNode(variable) }
    static func path(_ base: ExpressionNode, _ steps: [ExpressionPathStep]) -> ExpressionNode {
        ExpressionPathNode(base, steps)
    }
    static func array(_ items: [ExpressionNode]) -> ExpressionNode { ExpressionArrayNode(items) }
    static func object(_ members: [ExpressionObjectMember]) -> ExpressionNode { ExpressionObjectNode(members) }
    static func negate(_ operand: ExpressionNode, at position: Int) -> ExpressionNode {
        ExpressionNegateNode(operand, at: position)
    }
    static func not(_ operand: ExpressionNode) -> ExpressionNode { ExpressionNotNode(operand) }
    static func chain(_ first: ExpressionNode, _ steps: [ExpressionBinaryStep]) -> ExpressionNode {
        ExpressionChainNode(first, steps)
    }
    static func and(_ operands: [ExpressionNode]) -> ExpressionNode { ExpressionAndNode(operands) }
    static func or(_ operands: [ExpressionNode]) -> ExpressionNode { ExpressionOrNode(operands) }
    static func conditional(
        _ condition: ExpressionNode, _ then: ExpressionNode, _ otherwise: ExpressionNode
    ) -> ExpressionNode {
        ExpressionConditionalNode(condition, then, otherwise)
    }
}

/// A literal, or a constant subexpression folded at compile time.
final class ExpressionLiteralNode: ExpressionNode, @unchecked Sendable {
    let value: JSONValue

    init(_ value: JSONValue) { self.value = value }

    override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        return value
    }
    override var literalValue: JSONValue? { value }
}

/// `.`: the value being evaluated, whole (decoded, when it is read from bytes). As the base
/// of a path it is not evaluated: the path reads the input itself (`ExpressionPathNode`).
final class ExpressionInputNode: ExpressionNode, @unchecked Sendable {
    override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        return try input.tree(at: 0)
    }
}

/// `$acc`, `$index`, `$prev`, `$subject`, `$0`...`$9`.
final class ExpressionVariableNode: ExpressionNode, @unchecked Sendable {
    let variable: ExpressionVariable

    init(_ variable: ExpressionVariable) { self.variable = variable }

    override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        switch variable {
        case .acc: return bindings.acc
        case .index: return .number(Double(bindings.index))
        case .prev: return bindings.prev
        case .subject: return bindings.subject.map { .string($0) } ?? .null
        case .item(let position): return position < bindings.items.count ? bindings.items[position] : .null
        }
    }
}

/// A variable, resolved at compile time.
enum ExpressionVariable: Sendable, Equatable {
    case acc, index, prev, subject
    /// `$0`...`$9`.
    case item(Int)
}

/// One step of a path.
enum ExpressionPathStep: Sendable {
    /// `.name` or `.["name"]` with a literal key.
    case member(JSONMemberName, at: Int)
    /// `[e]`: a number indexes an array, a string an object.
    case index(ExpressionNode, at: Int)
}

/// One member of an object literal.
struct ExpressionObjectMember: Sendable {
    let key: String
    let value: ExpressionNode
}

/// One `op operand` link of a binary chain, with the operator's position for errors.
struct ExpressionBinaryStep: Sendable {
    let op: ExpressionBinaryOperator
    let operand: ExpressionNode
    let position: Int
}

/// The binary operators other than `&&` and `||`.
enum ExpressionBinaryOperator: Sendable {
    case add, subtract, multiply, divide, remainder
    case equal, notEqual, less, lessEqual, greater, greaterEqual

    /// The comparison that gives the same result with the operands swapped (`a < b` is
    /// `b > a`; `==` and `!=` are their own); nil for the arithmetic operators.
    var mirrored: ExpressionBinaryOperator? {
        switch self {
        case .less: return .greater
        case .lessEqual: return .greaterEqual
        case .greater: return .less
        case .greaterEqual: return .lessEqual
        case .equal, .notEqual: return self
        case .add, .subtract, .multiply, .divide, .remainder: return nil
        }
    }

    var symbol: String {
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
