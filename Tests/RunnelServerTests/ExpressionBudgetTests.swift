import Runnel
import RunnelExpression
import RunnelJSON
import RunnelProtocol
import Testing

@testable import RunnelServer

/// The per-evaluation budget: what a step and a byte are, that passing either is an `eval` /
/// "limit" failure checked before the costly work, and that ordinary expressions are untouched.
@Suite("Expression evaluation budget")
struct ExpressionBudgetTests {
    typealias T = ExpressionTesting

    static func numbers(_ count: Int) -> JSONValue { .array((0..<count).map { .number(Double($0)) }) }

    static func compile(_ source: String, _ budget: ExpressionBudget = .standard) throws(ExpressionError)
        -> CompiledExpression
    {
        try Expression.compile(source, variables: [], budget: budget)
    }

    @Test func aSimpleFilterCostsAFewStepsAndNoBytes() throws {
        let measured = try Self.compile(".a > 1").measure(T.object([("a", .number(2))]))
        #expect(measured.value == .bool(true))
        // The chain, the path (one member looked up in a one-member object), `.`, the literal.
        #expect(measured.steps == 5)
        #expect(measured.bytes == 0)
    }

    @Test(arguments: [1000, 10_000])
    func workOverAnArrayChargesAStepPerItem(count: Int) throws {
        let input = Self.numbers(count)
        for source in ["contains(., -1)", "str(.)", ". == [] + .", ". + [1]", "keys({}) + ."] {
            let measured = try Self.compile(source).measure(input)
            #expect(measured.steps >= count, "\(source): \(measured.steps) steps")
        }
        // Copying an array is charged per item, as bytes too (24 bytes an item, as documented).
        #expect(MemoryLayout<JSONValue>.stride == 24)
        let copied = try Self.compile(". + [1]").measure(input)
        #expect(copied.bytes >= (count + 1) * MemoryLayout<JSONValue>.stride)
        // Sending a result on charges what writing it costs.
        let output = try Self.compile(".").measure(input, output: true)
        #expect(output.steps >= count && output.bytes >= 2 * count)
        // `len` of an array is not a walk.
        #expect(try Self.compile("len(.)").measure(input).steps < 10)
    }

    @Test func stringsAreChargedBySixteenBytes() throws {
        let text = JSONValue.string(String(repeating: "a", count: 16_000))
        let concatenated = try Self.compile(". + .").measure(text)
        #expect(concatenated.steps >= 2000 && concatenated.bytes == 32_000)
        #expect(try Self.compile("upper(.)").measure(text).steps >= 4000)
        #expect(try Self.compile("contains(., \"b\")").measure(text).steps >= 1000)
    }

    @Test func aChainAppendingToWhatItBuiltPaysForTheTailOnly() throws {
        let text = JSONValue.string(String(repeating: "a", count: 1000))
        let five = try Self.compile(". + . + . + . + .").measure(text)
        // 2000 bytes for the first `+` (it copies `.`), then 1000 for each append.
        #expect(five.bytes == 5000)
    }

    @Test func passingTheStepsIsALimitError() throws {
        let input = Self.numbers(10_000)
        let tight = try Self.compile("contains(., -1)", ExpressionBudget(maxSteps: 5000))
        #expect(throws: ExpressionError(.limit, "more than 5000 steps (max_eval_steps)", at: 0)) {
            try tight.evaluate(input)
        }
        let error = try #require(T.evalErrorOf { try tight.evaluate(input) })
        #expect(error.code == "eval")
        // The same expression with room to spare.
        #expect(try Self.compile("contains(., -1)", ExpressionBudget(maxSteps: 30_000)).evaluate(input) == .bool(false))
    }

    @Test func aHugeConcatenationIsRefusedBeforeItIsBuilt() throws {
        // 64 references to a 1 MiB string would build 64 MiB; the first `+` past 1 MiB fails.
        let big = JSONValue.string(String(repeating: "x", count: 1024 * 1024))
        let source = Array(repeating: ".", count: 64).joined(separator: " + ")
        let budget = ExpressionBudget(maxSteps: 1_000_000_000, maxBytes: 1024 * 1024 + 1)
        let error = T.evalErrorOf { try Self.compile(source, budget).evaluate(big) }
        #expect(error == ExpressionError(.limit, "more than 1048577 bytes built (max_eval_bytes)", at: 2))
    }

    @Test func aResultSentOnIsChargedForItsText() throws {
        // `[., ., ...]` builds 32 items, but written out it is 32 MiB.
        let big = JSONValue.string(String(repeating: "x", count: 1024 * 1024))
        let many = try Self.compile("[" + Array(repeating: ".", count: 32).joined(separator: ",") + "]")
        #expect(try many.evaluate(big) != .null)
        #expect(T.evalErrorOf { try many.evaluateOutput(big) }?.kind == .limit)
    }

    @Test func objectLookupsAndEqualityAreCharged() throws {
        let members = (0..<5000).map { (key: "k\($0)", value: JSONValue.number(Double($0))) }
        let object = JSONValue.object(JSONObject(members))
        #expect(try Self.compile(".k4999").measure(object).steps >= 5000)
        #expect(try Self.compile("has(., \"x\")").measure(object).steps >= 5000)
        // One and the same object is compared member by member, as on bytes, where each `.` is
        // decoded anew: the steps depend on the values only.
        #expect(try Self.compile(". == .").measure(object).steps >= 5000)
        let same = JSONValue.object(JSONObject(members.map { $0 }))
        let reordered = JSONValue.object(JSONObject(members.reversed()))
        let pairwise = try Self.compile(".[0] == .[1]").measure(.array([object, same]))
        #expect(pairwise.value == .bool(true) && pairwise.steps >= 5000)
        let hashed = try Self.compile(".[0] == .[1]").measure(.array([object, reordered]))
        #expect(hashed.value == .bool(true) && hashed.steps >= 10_000 * ExpressionBudget.stepsPerHashedMember)
        #expect(try Self.compile("len(.)").measure(object).steps >= 5000 * ExpressionBudget.stepsPerHashedMember)
    }

    @Test func equalityKeepsItsMeaning() throws {
        #expect(try T.run(#"{"a": 1, "b": [1, 2]} == {"b": [1.0, 2], "a": 1}"#) == .bool(true))
        #expect(try T.run(#"{"a": 1, "a": 2} == {"a": 2}"#) == .bool(true))
        #expect(try T.run(#"{"a": 1} == {"a": 1, "b": null}"#) == .bool(false))
        #expect(try T.run(#"[1, "x", null, true] != [1, "x", null, true]"#) == .bool(false))
        #expect(try T.run(#"contains([[1], {"a": "b"}], {"a": "b"})"#) == .bool(true))
        #expect(try T.run(#". == ."#, Self.numbers(3)) == .bool(true))
        // Repeated keys in input objects: the last one counts, whatever the earlier values.
        let repeated = JSONValue.array([
            T.object([("a", .number(1)), ("a", .number(2))]), T.object([("a", .number(3)), ("a", .number(2))]),
            T.object([("a", .number(2))]),
        ])
        #expect(try T.run(".[0] == .[1] && .[1] == .[2]", repeated) == .bool(true))
    }

    @Test func ordinaryExpressionsOnOrdinaryValuesAreFarFromTheDefaults() throws {
        let sources = [
            ".load > 0.9", #"{"h": .host, "pct": round(.load * 100)}"#, #"str(.) + "!""#,
            #"contains(.tags, "x") && len(.tags) < 10"#, #"upper(.host) + "-" + str(.load)"#,
        ]
        let value = T.object([
            ("host", .string("alpha.example")), ("load", .number(0.93)),
            ("tags", .array((0..<50).map { .string("t\($0)") })),
        ])
        for source in sources {
            let measured = try Self.compile(source).measure(value, output: true)
            #expect(measured.steps < 2000 && measured.bytes < 10_000, "\(source): \(measured)")
        }
        // Whole-value work on a message of about 1 MiB fits too.
        let large = Self.numbers(130_000)
        for source in ["len(str(.))", ". + [1]", "contains(., -1)", "."] {
            #expect(throws: Never.self) { try Self.compile(source).evaluateOutput(large) }
        }
    }
}

@Suite("Evaluation budget in stages")
struct StageBudgetTests {
    @Test func aMapOverItsBudgetEndsWithLimit() throws {
        let h = try StageHarness(evalBudget: ExpressionBudget(maxSteps: 500)).run(
            #"[{"op":"map","expr":"contains(., -1)"}]"#)
        try h.pub("[1,2,3]")
        try h.pub("[" + (0..<1000).map(String.init).joined(separator: ",") + "]")
        #expect(h.values() == ["false", "error eval 0 limit"])
    }

    @Test func aScanWhoseAccumulatorDoublesEndsWithLimit() throws {
        // `[$acc, $acc]` holds two items but doubles what writing it out costs each time.
        let h = try StageHarness(evalBudget: ExpressionBudget(maxBytes: 4096)).run(
            #"[{"op":"scan","start":"abcdefgh","expr":"[$acc, $acc]"}]"#)
        try h.pub(Array(repeating: "0", count: 12))
        let values = h.values()
        #expect(values.last == "error eval 0 limit")
        #expect(values.count < 12)
    }

    @Test func everySubscriberSharesTheOutcomeOfOneEvaluation() throws {
        // Two chains with the same expression of the value alone and the same budget: the
        // value is evaluated once, and both end with the same error.
        let budget = ExpressionBudget(maxSteps: 500)
        let expression = try Expression.compile("contains(., -1)", variables: [], budget: budget)
        let thousand = "[" + (0..<1000).map(String.init).joined(separator: ",") + "]"
        let payload = Payload(raw: try RawJSON(validating: thousand))
        let input = try payload.decoded()
        var runs = 0
        for _ in 0..<3 {
            let outcome = try payload.memoized(expression, label: SubjectLabel("s")) {
                () throws(ProtocolError) -> Result<Payload, ExpressionError> in
                runs += 1
                do throws(ExpressionError) {
                    return .success(Payload(computed: try expression.evaluateOutput(input)))
                } catch {
                    return .failure(error)
                }
            }
            guard case .failure(let error) = outcome else { Issue.record("expected a failure"); return }
            #expect(error.kind == .limit)
        }
        #expect(runs == 1)
        // The same source under another budget is evaluated on its own.
        let roomy = try Expression.compile("contains(., -1)", variables: [])
        let outcome = try payload.memoized(roomy, label: SubjectLabel("s")) {
            () throws(ProtocolError) -> Result<Payload, ExpressionError> in
            runs += 1
            return .success(Payload(computed: .bool(false)))
        }
        #expect(try outcome.get().computedValue == .bool(false) && runs == 2)
    }

    @Test func twoSubscriptionsToOneValueBothEndWithLimit() throws {
        let h = StageHarness(evalBudget: ExpressionBudget(maxSteps: 500))
        let ops = #"[{"op":"filter","expr":"contains(., -1) == false"}]"#
        try h.run(ops)
        let second = try h.compile(ops)
        let seen = Locked<[String]>([])
        let disposable = h.scheduler.performAsCurrent {
            second.subscribe(
                next: { _ in seen.withLock { $0.append("next") } },
                error: { error in seen.withLock { $0.append(ProtocolError(wrapping: error).message) } },
                completed: { seen.withLock { $0.append("completed") } })
        }
        try h.pub("[" + (0..<1000).map(String.init).joined(separator: ",") + "]")
        #expect(h.values() == ["error eval 0 limit"])
        #expect(seen.withLock { $0 } == ["limit"])
        disposable.dispose()
    }
}
