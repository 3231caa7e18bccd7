import RunnelExpression
import RunnelJSON
import Testing

@testable import RunnelServer

/// `.name OP number` tested on a published value's bytes without the tree
/// (`ExpressionMemberComparison`, through `CompiledExpression.test`): recognised only in that
/// shape, and wherever it answers, the same truth and the same steps as the tree; where it
/// does not (no such member, another type, a budget too small), the tree's value or error.
@Suite struct ExpressionMemberComparisonTests {
    /// Checks that `source` tested on `json`, read in place every way a stage reads it,
    /// agrees with the truthiness of its value on the decoded tree (or fails with the same
    /// error), at the same steps; returns the tree's outcome.
    @discardableResult
    static func agree(
        _ source: String, _ json: String, budget: ExpressionBudget = .standard,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Result<Bool, ExpressionError> {
        let compiled = try Expression.compile(source, variables: [], budget: budget)
        let raw = try RawJSON(validating: json)
        let full = ExpressionLazyPathTests.outcome(compiled, .tree(try raw.decoded()))
        let expected = full.result.map(\.isTruthy)
        let (inputs, payloads) = ExpressionLazyPathTests.byteInputs(raw)
        withExtendedLifetime(payloads) {
            for input in inputs {
                var meter = ExpressionMeter(compiled.budget)
                let tested = Result { () throws(ExpressionError) in
                    try compiled.test(input, ExpressionBindings(), on: &meter)
                }
                #expect(tested == expected, "\(source) on \(json)", sourceLocation: sourceLocation)
                // (Past the budget, the steps taken before it ran out are not compared: reading
                // bytes charges a path's two steps at once, the tree one at a time.)
                if case .failure(let error) = full.result, error.kind == .limit { continue }
                #expect(meter.stepsUsed == full.steps, "steps of \(source) on \(json)", sourceLocation: sourceLocation)
            }
        }
        return expected
    }

    @Test func recognisesOneMemberAgainstANumberOnly() throws {
        for source in [
            ".load > 0.9", ".load >= 1", ".load < -2", ".load <= 1e3", ".load == 0.95", ".load != 3",
            "0.9 < .load", "1 >= .load", #".["a b"] > 1"#, ".load > -0.5", ".x > 1 + 1",
        ] {
            #expect(try Expression.compile(source, variables: []).memberComparison != nil, "\(source)")
        }
        for source in [
            ".load + 1 > 2", ".a.b > 1", ".load > \"x\"", ".load > null", "$index > 1", ". > 1", ".[0] > 1",
            ".load > 1 > 0", ".a > .b", "1 < 2", ".load", ".load * 2", "(.load > 1) == true",
        ] {
            #expect(try Expression.compile(source, variables: ["index"]).memberComparison == nil, "\(source)")
        }
    }

    @Test func everyOperatorOnEitherSide() throws {
        let values = ["0.9", "0.95", "1", "-0.0", "0", "1e2", "-3.5", "123456789012345678901234567890"]
        let sources = [
            ".load > 0.95", ".load >= 0.95", ".load < 0.95", ".load <= 0.95", ".load == 0.95", ".load != 0.95",
            "0.95 > .load", "0.95 >= .load", "0.95 < .load", "0.95 <= .load", "0.95 == .load", "0.95 != .load",
            ".load == 0", ".load > -1",
        ]
        var truths: Set<Bool> = []
        for value in values {
            for source in sources {
                truths.insert(try Self.agree(source, #"{"p":"x","load":\#(value),"q":[1]}"#).get())
            }
        }
        #expect(truths == [true, false])
        #expect(try Self.agree(".load > 0.9", #"{"load":0.95}"#).get())
        #expect(try !Self.agree("0.9 > .load", #"{"load":0.95}"#).get())
        #expect(try Self.agree(".load == 0", #"{"load":-0.0}"#).get())
    }

    /// A value compared with itself costs what comparing two copies costs: reading bytes
    /// decodes each side anew, where the tree hands out one storage twice (found by
    /// LazyPathFuzzer: `. != . != -0`).
    @Test func aValueComparedWithItselfCostsWhatACopyDoes() throws {
        try Self.agree(". != . != -0", #"{"load":-0.0}"#)
        try Self.agree(". == .", #"{"a":{"x":[1,"y"]}}"#)
        try Self.agree(".a == .a", #"{"a":{"x":[1,"y"]}}"#)
        try Self.agree(".a == .a", #"{"a":[1,[2,3]]}"#)
        try Self.agree("contains([.a], .a)", #"{"a":[1,[2,3]]}"#)
    }

    @Test func otherTypesAndMissingMembersGiveTheTreesAnswer() throws {
        for json in [
            #"{"load":"0.95"}"#, #"{"load":null}"#, #"{"load":true}"#, #"{"load":[1]}"#, #"{"load":{"a":1}}"#,
            #"{"x":1}"#, "{}", "[1]", "null", "5", #""load""#,
        ] {
            for source in [".load > 0.9", ".load == 0.9", ".load != 0.9", "0.9 <= .load"] {
                try Self.agree(source, json)
            }
        }
        #expect(try Self.agree(".load == 1", #"{"load":"1"}"#).get() == false)
        #expect(try Self.agree(".load != 1", #"{"x":1}"#).get() == true)
        if case .success = try Self.agree(".load > 1", #"{"load":"2"}"#) { Issue.record("a string compared with >") }
    }

    @Test func theLastOfARepeatedKeyAndWhitespace() throws {
        #expect(try !Self.agree(".load > 0.9", #"{"load":0.95,"load":0.5}"#).get())
        #expect(try Self.agree(".load > 0.9", "{ \"load\" : 0.5 , \"load\"\t:\n1.5 }").get())
        #expect(try Self.agree(#".["a b"] > 1"#, #"{"a b":2}"#).get())
        try Self.agree(".load > 0.9", #"{"lo\u0061d":0.95}"#)
    }

    @Test func aBudgetTooSmallFailsAsTheTreeDoes() throws {
        let json = #"{"a":1,"b":2,"load":3}"#
        for steps in 1...8 {
            let outcome = try Self.agree(".load > 2", json, budget: ExpressionBudget(maxSteps: steps))
            // Four steps for the nodes and three for the members looked through.
            if steps >= 7 {
                #expect(try outcome.get())
            } else if case .failure(let error) = outcome {
                #expect(error.kind == .limit)
            } else {
                Issue.record("passed with \(steps) steps")
            }
        }
    }

    @Test func aNumberTooLargeForADoubleFailsAsReadingItDoes() throws {
        let compiled = try Expression.compile(".load > 1", variables: [])
        let payload = Payload(raw: try RawJSON(validating: #"{"load":1e999}"#))
        let tested = Result { () throws(ExpressionError) in try compiled.measureTest(reading: payload) }
        let read = Result { () throws(ExpressionError) in try compiled.evaluate(reading: payload) }
        #expect(throws: ExpressionError.self) { try tested.get() }
        #expect(tested.map(\.truth) == read.map(\.isTruthy))
    }
}
