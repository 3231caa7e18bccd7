/// The compiled form of an expression: a tree whose variables are resolved to slots and whose
/// function names are resolved to `ExpressionFunction` ids, so evaluating does no lookups by
/// name. Immutable and `Sendable`: one compiled tree may be evaluated from any thread.
///
/// Left-associative chains (`a + b - c`, `a && b && c`) and path steps (`.a.b[0]`) are stored
/// flat and evaluated in a loop, so the tree is only as deep as the expression's real nesting,
/// which the parser bounds (`maxDepth`); evaluation recursion is bounded by the same figure.
indirect enum ExpressionNode: Sendable {
    /// A literal, or a constant subexpression folded at compile time.
    case literal(JSONValue)
    /// `.`: the value being evaluated.
    case input
    case variable(ExpressionVariable)
    /// `base.a[e]...`: member and index steps applied left to right.
    case path(ExpressionNode, [ExpressionPathStep])
    /// `[e, ...]`.
    case array([ExpressionNode])
    /// `{"k": e, ...}`: keys in written order; a repeated key keeps its first place, last value.
    case object([ExpressionObjectMember])
    /// Prefix `-` (position of the operator).
    case negate(ExpressionNode, at: Int)
    /// Prefix `!`: the negated truthiness.
    case not(ExpressionNode)
    /// `first op operand op operand ...` for one precedence level of binary operators.
    case chain(ExpressionNode, [ExpressionBinaryStep])
    /// `a && b && ...`: short-circuit, result a boolean.
    case and([ExpressionNode])
    /// `a || b || ...`: short-circuit, result a boolean.
    case or([ExpressionNode])
    /// `c ? a : b`.
    case conditional(ExpressionNode, ExpressionNode, ExpressionNode)
    /// A function call; the argument count matches the function's arity.
    case call(ExpressionFunction, [ExpressionNode], at: Int)

    var literalValue: JSONValue? {
        if case .literal(let value) = self { return value }
        return nil
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
    case member(String, at: Int)
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
