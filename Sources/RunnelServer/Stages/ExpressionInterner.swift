import RunnelExpression

/// One `CompiledExpression` for every identical expression the server's chains compile (the
/// same source, variables and budget), so that when many subscriptions run the same chain,
/// the memo a value keeps (`Payload.memoized`) is found by comparing one pointer, and the
/// outcome computed for the first subscriber serves the others.
///
/// An expression no chain uses any more is released: the table holds the only reference to
/// it then, which `isKnownUniquelyReferenced` sees. The table is swept whenever it has doubled
/// since the last sweep, and at least half its size in compiles after the last one (so a
/// sweep's cost is spread over the compiles since, even when a full table frees nothing), and
/// is bounded (`capacity`): if it is full after a sweep, an expression is compiled without
/// being shared (correct, only not shared). It holds strong references, not weak ones: an object
/// referenced weakly keeps its counts in a side table, and every retain and release of it on
/// the delivery path would take the slow path.
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

    /// The most entries the table holds.
    static let capacity = 4096
    /// The smallest table that is swept.
    private static let firstSweep = 64

    private let clock: ExpressionClock
    private var entries: [Key: CompiledExpression] = [:]
    /// The size at which the table is swept next.
    private var nextSweep = ExpressionInterner.firstSweep
    /// Compiles since the last sweep.
    private var compilesSinceSweep = 0
    /// Sweeps so far (for tests).
    private(set) var sweeps = 0

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
        if let shared = entries[key], source.utf8.count <= maxBytes { return shared }
        let compiled = try Expression.compile(
            source, variables: variables, maxBytes: maxBytes, clock: clock, budget: budget)
        compilesSinceSweep += 1
        if entries.count >= nextSweep, 2 * compilesSinceSweep >= entries.count {
            releaseUnused()
            sweeps += 1
            compilesSinceSweep = 0
            nextSweep = Swift.min(Self.capacity, Swift.max(Self.firstSweep, 2 * entries.count))
        }
        if entries.count < Self.capacity { entries[key] = compiled }
        return compiled
    }

    /// Drops the expressions only the table holds.
    func releaseUnused() {
        for key in Array(entries.keys) where isKnownUniquelyReferenced(&entries[key]!) {
            entries[key] = nil
        }
    }

    /// How many entries the table holds (for tests).
    var count: Int { entries.count }
}
