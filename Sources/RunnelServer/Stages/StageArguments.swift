import RunnelExpression
import RunnelJSON
import RunnelProtocol

/// Typed, validated reads of one stage object `{"op": NAME, ...}`.
///
/// Every failure is a `ProtocolError` carrying the stage's index: a missing or wrongly typed
/// argument is `bad_operator` naming the argument, an expression that does not compile is
/// `bad_expr` with the expression error's message and byte position. Arguments a stage does
/// not read are refused too (`checkNoOtherArguments`), so a misspelt one is reported rather
/// than silently ignored. A value type, used only while a chain is compiled.
struct StageArguments {
    /// The stage's 0-based position in the list.
    let index: Int
    /// The stage's `op`.
    let name: String
    private let members: JSONObject
    private let limits: StageLimits
    /// What the stage's expressions charge their evaluations to (`StageCompiler.account`).
    let account: EvaluationAccount?
    /// Where its expressions are compiled, shared with identical ones (`StageCompiler.interner`).
    private let interner: ExpressionInterner?

    /// The shortest and longest `seconds` accepted.
    static let secondsRange: ClosedRange<Double> = 0.001...86_400

    init(
        _ stage: JSONValue, index: Int, limits: StageLimits, account: EvaluationAccount?,
        interner: ExpressionInterner? = nil
    ) throws(ProtocolError) {
        self.index = index
        self.limits = limits
        self.account = account
        self.interner = interner
        guard case .object(let members) = stage else {
            throw ProtocolError(.badOperator, "stage \(index) must be an object {\"op\": NAME, ...}", stage: index)
        }
        guard case .string(let name)? = members["op"] else {
            throw ProtocolError(.badOperator, "stage \(index) needs a string 'op'", stage: index)
        }
        self.name = name
        self.members = members
    }

    /// A `bad_operator` error about this stage.
    func failure(_ message: String) -> ProtocolError {
        ProtocolError(.badOperator, "stage '\(name)': \(message)", stage: index)
    }

    /// Refuses every argument but `op` and `allowed`.
    func checkNoOtherArguments(_ allowed: Set<String>) throws(ProtocolError) {
        for key in members.keys where key != "op" && !allowed.contains(key) {
            throw failure("unknown argument '\(key)'")
        }
    }

    func has(_ key: String) -> Bool { members[key] != nil }

    /// The JSON literal in `key`, which must be present.
    func value(_ key: String) throws(ProtocolError) -> JSONValue {
        guard let value = members[key] else { throw failure("missing argument '\(key)'") }
        return value
    }

    /// `count`: an integer >= 0.
    func count(_ key: String = "count") throws(ProtocolError) -> Int {
        guard case .number(let number) = try value(key), number >= 0, number <= Double(Int32.max),
            number.rounded(.towardZero) == number
        else {
            throw failure("argument '\(key)' must be an integer >= 0")
        }
        return Int(number)
    }

    /// `seconds`: a number within `secondsRange`, as a duration.
    func seconds(_ key: String = "seconds") throws(ProtocolError) -> Duration {
        guard case .number(let number) = try value(key), Self.secondsRange.contains(number) else {
            throw failure(
                "argument '\(key)' must be a number of seconds from \(Self.secondsRange.lowerBound) to \(Int(Self.secondsRange.upperBound))"
            )
        }
        return .nanoseconds(Int64((number * 1_000_000_000).rounded()))
    }

    /// A subject name in `key`.
    func subject(_ key: String = "subject") throws(ProtocolError) -> String {
        guard case .string(let name) = try value(key) else { throw failure("argument '\(key)' must be a subject name") }
        try checkName(name, key)
        return name
    }

    /// A non-empty list of subject names in `key`.
    func subjects(_ key: String = "subjects") throws(ProtocolError) -> [String] {
        guard case .array(let items) = try value(key), !items.isEmpty else {
            throw failure("argument '\(key)' must be a non-empty array of subject names")
        }
        var names: [String] = []
        for item in items {
            guard case .string(let name) = item else {
                throw failure("argument '\(key)' must be a non-empty array of subject names")
            }
            try checkName(name, key)
            names.append(name)
        }
        return names
    }

    private func checkName(_ name: String, _ key: String) throws(ProtocolError) {
        if let problem = SubjectName.problem(withName: name) {
            throw failure("argument '\(key)': bad subject name: \(problem)")
        }
    }

    /// The expression in `key`, compiled; `variables` are those the stage binds.
    func expression(_ key: String = "expr", variables: Set<String> = []) throws(ProtocolError) -> CompiledExpression {
        guard case .string(let source) = try value(key) else {
            throw failure("argument '\(key)' must be an expression string")
        }
        do {
            if let interner {
                return try interner.compile(
                    source, variables: variables, maxBytes: limits.maxExprBytes, budget: limits.evalBudget)
            }
            return try Expression.compile(
                source, variables: variables, maxBytes: limits.maxExprBytes, clock: limits.clock,
                budget: limits.evalBudget)
        } catch {
            throw ProtocolError(
                .badExpr, "stage '\(name)': \(error.message) (at byte \(error.position))", stage: index)
        }
    }

    /// The expression in `key` when present.
    func optionalExpression(_ key: String = "expr", variables: Set<String> = []) throws(ProtocolError)
        -> CompiledExpression?
    {
        has(key) ? try expression(key, variables: variables) : nil
    }
}
