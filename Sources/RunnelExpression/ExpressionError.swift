/// A failed expression: a compile error (`bad_expr`, reported when a `sub` names the expression)
/// or a run-time error (`eval`, which ends the subscription whose stage raised it), including
/// an evaluation that passed its budget (kind `.limit`).
///
/// `position` is a 0-based UTF-8 byte offset into the expression's source: where the compile
/// error was found, or where the failing operator, path step or function call was written.
public struct ExpressionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which protocol error code the failure maps to.
    public enum Kind: Sendable, Equatable {
        /// Found while compiling: protocol code `bad_expr`.
        case badExpression
        /// Found while evaluating a value: protocol code `eval`.
        case evaluation
        /// The evaluation passed its `ExpressionBudget`: protocol code `eval`, which a stage
        /// reports with the message "limit", as it does for `max_buffer_values`.
        case limit
    }

    public let kind: Kind
    public let message: String
    public let position: Int

    public init(_ kind: Kind, _ message: String, at position: Int) {
        self.kind = kind
        self.message = message
        self.position = position
    }

    /// The protocol's error code: `bad_expr` or `eval`.
    public var code: String {
        switch kind {
        case .badExpression: return "bad_expr"
        case .evaluation, .limit: return "eval"
        }
    }

    public var description: String { "\(code) at \(position): \(message)" }

    package static func compile(_ message: String, at position: Int) -> ExpressionError {
        ExpressionError(.badExpression, message, at: position)
    }

    package static func eval(_ message: String, at position: Int) -> ExpressionError {
        ExpressionError(.evaluation, message, at: position)
    }
}
