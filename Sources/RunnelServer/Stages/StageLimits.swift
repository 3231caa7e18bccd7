import RunnelExpression

/// The configured bounds a stage chain is compiled under. Immutable.
public struct StageLimits: Sendable {
    /// The most stages one `sub` may list (`max_stages`); more fail the `sub` with `limit`.
    public var maxStages: Int
    /// The most values an accumulating stage may hold (`max_buffer_values`); more end the
    /// subscription with `eval` / "limit".
    public var maxBufferValues: Int
    /// The longest expression accepted (`max_expr_bytes`).
    public var maxExprBytes: Int
    /// How much one evaluation of an expression may do (`max_eval_steps`, `max_eval_bytes`);
    /// past it the subscription ends with `eval` / "limit".
    public var evalBudget: ExpressionBudget
    /// What `now()` reads in expressions.
    public var clock: ExpressionClock

    public init(
        maxStages: Int = 32, maxBufferValues: Int = 100_000, maxExprBytes: Int = Expression.defaultMaxBytes,
        evalBudget: ExpressionBudget = .standard, clock: @escaping ExpressionClock = Expression.systemClock
    ) {
        self.evalBudget = evalBudget
        self.maxStages = maxStages
        self.maxBufferValues = maxBufferValues
        self.maxExprBytes = maxExprBytes
        self.clock = clock
    }

    /// The limits a server configuration sets.
    public init(config: ServerConfig) {
        self.init(
            maxStages: config.maxStages, maxBufferValues: config.maxBufferValues, maxExprBytes: config.maxExprBytes,
            evalBudget: ExpressionBudget(maxSteps: config.maxEvalSteps, maxBytes: config.maxEvalBytes))
    }
}
