import RunnelExpression
import RunnelJSON
import RunnelServer

/// Helpers shared by the Expression*Tests suites.
enum ExpressionTesting {
    /// The clock every test compiles with: `now()` reads this.
    static let fixedNow = 1_700_000_000.25

    static func compile(_ source: String, variables: Set<String> = []) throws(ExpressionError) -> CompiledExpression {
        try Expression.compile(source, variables: variables, clock: { fixedNow })
    }

    /// Compiles `source` with every variable bound and evaluates it on `input`.
    static func run(
        _ source: String, _ input: JSONValue = .null, bindings: ExpressionBindings = ExpressionBindings()
    ) throws(ExpressionError) -> JSONValue {
        try compile(source, variables: ["acc", "index", "prev", "items"]).evaluate(input, bindings)
    }

    /// The error compiling `source` gives, or nil when it compiles.
    static func compileError(_ source: String, variables: Set<String> = []) -> ExpressionError? {
        do {
            _ = try compile(source, variables: variables)
            return nil
        } catch {
            return error
        }
    }

    /// The error evaluating `source` (which must compile) on `input` gives, or nil.
    static func evalError(_ source: String, _ input: JSONValue = .null) throws(ExpressionError) -> ExpressionError? {
        let compiled = try compile(source, variables: ["acc", "index", "prev", "items"])
        do {
            _ = try compiled.evaluate(input)
            return nil
        } catch {
            return error
        }
    }

    /// The error `body` throws, or nil.
    static func evalErrorOf(_ body: () throws -> JSONValue) -> ExpressionError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? ExpressionError
        }
    }

    static func object(_ members: [(String, JSONValue)]) -> JSONValue {
        .object(JSONObject(members.map { (key: $0.0, value: $0.1) }))
    }

    /// `{"a":{"b":2},"items":[10,20,30],"odd key":"yes","s":"héllo","n":null,"t":true}`
    static let document: JSONValue = object([
        ("a", object([("b", .number(2))])),
        ("items", .array([.number(10), .number(20), .number(30)])),
        ("odd key", .string("yes")),
        ("s", .string("héllo")),
        ("n", .null),
        ("t", .bool(true)),
    ])
}
