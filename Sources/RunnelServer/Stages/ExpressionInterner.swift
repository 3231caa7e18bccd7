/// One `CompiledExpression` for every identical expression the server's chains compile (the
/// same source, variables and budget), so that when many subscriptions run the same chain,
/// the memo a value keeps (`Payload.memoized`) is found by comparing one pointer, and the
/// outcome computed for the first subscriber serves the others.
///
/// It holds its expressions weakly: one lives as long as a chain uses it, and the table never
/// keeps it alive. The table is bounded (`capacity`); when it is full the entries of released
/// expressions are dropped, and if it is still full an expression is compiled without being
/// shared (correct, only not shared).
///
/// Every expression it hands out reads `clock` for `now()`, which is why it compiles with its
/// own and the clock is no part of the key. Loop thread only (`@unchecked Sendable`: the
/// `Sendable` stage compilers hold it, and they run on the loop). One per server.
final class ExpressionInterner: @unchecked Sendable {
    private struct Key: Hashable {
        let source: String
        let variables: Set<String>
        let budget: ExpressionBudget
    }

    private struct WeakExpression {
        weak var expression: CompiledExpression?
    }

    /// The most entries the table holds.
    static let capacity = 4096

    private let clock: ExpressionClock
    private var entries: [Key: WeakExpression] = [:]

    init(clock: @escaping ExpressionClock) {
        self.clock = clock
    }

    /// The shared compiled form of `source`, compiled now if no chain holds one; compile
    /// errors as `Expression.compile`'s.
    func compile(_ source: String, variables: Set<String>, maxBytes: Int, budget: ExpressionBudget)
        throws(ExpressionError) -> CompiledExpression
    {
        let key = Key(source: source, variables: variables, budget: budget)
        // The length limit is checked again: it may have been lowered since the entry was made.
        if let shared = entries[key]?.expression, source.utf8.count <= maxBytes { return shared }
        let compiled = try Expression.compile(
            source, variables: variables, maxBytes: maxBytes, clock: clock, budget: budget)
        if entries.count >= Self.capacity { entries = entries.filter { $0.value.expression != nil } }
        if entries.count < Self.capacity { entries[key] = WeakExpression(expression: compiled) }
        return compiled
    }

    /// How many entries the table holds (for tests).
    var count: Int { entries.count }
}
