import RunnelExpression
import RunnelJSON
import RunnelProtocol
import RunnelTestSupport
import Testing

@testable import RunnelServer

/// Paths reading a published value's bytes in place (`JSONValueBytes`, `ExpressionInput.bytes`):
/// every rule of `ExpressionEvaluator.member` and `index` gives what it gives on the decoded
/// tree, with the same errors and the same steps charged, and `project` gives a member's exact
/// bytes.
@Suite struct ExpressionLazyPathTests {
    /// The value and steps of `source` on `json` read lazily, after checking they equal the
    /// full evaluation's (value or error, and steps charged).
    @discardableResult
    static func agree(
        _ source: String, _ json: String, budget: ExpressionBudget = .standard,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Result<JSONValue, ExpressionError> {
        let compiled = try Expression.compile(source, variables: [], budget: budget)
        let raw = try RawJSON(validating: json)
        let tree = try raw.decoded()
        let full = outcome(compiled, .tree(tree))
        let lazy = lazyOutcomes(compiled, raw)
        for outcome in lazy {
            #expect(outcome.result == full.result, "\(source) on \(json)", sourceLocation: sourceLocation)
            #expect(outcome.steps == full.steps, "steps of \(source) on \(json)", sourceLocation: sourceLocation)
        }
        return lazy[0].result
    }

    /// `compiled`'s outcomes on `raw` read in place, every way a stage reads it (`byteInputs`).
    static func lazyOutcomes(_ compiled: CompiledExpression, _ raw: RawJSON)
        -> [(result: Result<JSONValue, ExpressionError>, steps: Int)]
    {
        let (inputs, payloads) = byteInputs(raw)
        return withExtendedLifetime(payloads) { inputs.map { outcome(compiled, $0) } }
    }

    /// `raw` read in place every way a stage reads it: scanned; as a `Payload` twice (the
    /// first lookup notes where the members sit, the second reads that index:
    /// `Payload.member(named:in:)`); and as the payload a `pub` of it makes, whose index the
    /// request's scan noted (`ScannedEnvelope.valueMembers`). The inputs point into
    /// `payloads`, which the caller keeps alive while it uses them.
    static func byteInputs(_ raw: RawJSON) -> (inputs: [ExpressionInput], payloads: [Payload]) {
        let payload = Payload(raw: raw)
        let bytes = JSONValueBytes(validated: payload.publishedBytes!)
        let published = publishedPayload(raw)
        let publishedBytes = JSONValueBytes(validated: published.publishedBytes!)
        let inputs: [ExpressionInput] = [
            .bytes(bytes, of: nil),
            .bytes(bytes, of: Unmanaged.passUnretained(payload)),
            .bytes(bytes, of: Unmanaged.passUnretained(payload)),
            .bytes(publishedBytes, of: Unmanaged.passUnretained(published)),
        ]
        return (inputs, [payload, published])
    }

    /// The payload of `raw` published by a `pub` request, with the index its scan noted.
    static func publishedPayload(_ raw: RawJSON) -> Payload {
        var line = Array(#"{"op":"pub","subject":"s","value":"#.utf8)
        raw.withUnsafeBytes { line.append(contentsOf: $0) }
        line.append(UInt8(ascii: "}"))
        return line.withUnsafeBytes { bytes in
            let scanned = try! EnvelopeScanner(maxDepth: .max).scan(bytes)
            return Payload(raw: scanned.rawJSON(.value)!, members: scanned.valueMembers)
        }
    }

    static func outcome(_ compiled: CompiledExpression, _ input: ExpressionInput)
        -> (result: Result<JSONValue, ExpressionError>, steps: Int)
    {
        var meter = ExpressionMeter(compiled.budget)
        let result = Result { () throws(ExpressionError) in
            try compiled.evaluate(input, ExpressionBindings(), output: false, on: &meter)
        }
        return (result, meter.stepsUsed)
    }

    @Test func membersAndTheLastOfARepeatedKey() throws {
        #expect(try Self.agree(".load", #"{"load":0.95,"p":"x"}"#).get() == .number(0.95))
        #expect(try Self.agree(".a", #"{"a":1,"b":{"a":3},"a":2}"#).get() == .number(2))
        #expect(try Self.agree(".a.b", #"{"a":{"b":[1,{"c":"}"}]},"x":"]"}"#).get() != .null)
        #expect(try Self.agree(".missing", #"{"a":1}"#).get() == .null)
        #expect(try Self.agree(".a", "{}").get() == .null)
        #expect(try Self.agree(#".[""]"#, #"{"":7}"#).get() == .number(7))
        #expect(try Self.agree(".t", #"{"t":true,"f":false,"n":null}"#).get() == .bool(true))
        #expect(try Self.agree(".f", #"{"t":true,"f":false,"n":null}"#).get() == .bool(false))
        #expect(try Self.agree(".n.x", #"{"t":true,"f":false,"n":null}"#).get() == .null)
        #expect(try Self.agree(".e", #"{"e":-1.5e-3}"#).get() == .number(-0.0015))
        // Whitespace around keys, colons, values and commas.
        let spaced = "{ \"a\" :\t1 ,\n\"b\"\r\n: [ 2 , 3 ] , \"c\" : -4e1 }"
        #expect(try Self.agree(".b[1]", spaced).get() == .number(3))
        #expect(try Self.agree(".c", spaced).get() == .number(-40))
        #expect(try Self.agree(".z", spaced).get() == .null)
    }

    @Test func keysWithEscapesCompareDecoded() throws {
        #expect(try Self.agree(".a", #"{"\u0061":5}"#).get() == .number(5))
        #expect(try Self.agree(#".["a\"b"]"#, #"{"a\"b":1}"#).get() == .number(1))
        #expect(try Self.agree(#".["a/b"]"#, #"{"a\/b":3}"#).get() == .number(3))
        #expect(try Self.agree(#".["é"]"#, #"{"\u00e9":4,"é":6}"#).get() == .number(6))
        #expect(try Self.agree(".ab", #"{"a\u0062":1,"ab":2,"\u0061b":3}"#).get() == .number(3))
        // A key ending in an escaped backslash ends at the quote after it.
        #expect(try Self.agree(".a", #"{"a\\":1,"a":2}"#).get() == .number(2))
        #expect(try Self.agree(#".["a\\"]"#, #"{"a\\":1,"a":2}"#).get() == .number(1))
        #expect(try Self.agree(#".["a\""]"#, #"{"a\\":1,"a\"":2}"#).get() == .number(2))
        // A value's escapes are decoded too.
        #expect(try Self.agree(".s", #"{"s":"a\"b\\c\u00e9\ud83d\ude00"}"#).get() == .string("a\"b\\cé😀"))
    }

    @Test func nestedArraysAndIndexRules() throws {
        let json = #"{"a":[[1,2],[3,[4,5]],"x"]}"#
        #expect(try Self.agree(".a[1][1][-1]", json).get() == .number(5))
        #expect(try Self.agree(".a[0][1]", json).get() == .number(2))
        #expect(try Self.agree(".a[-1]", json).get() == .string("x"))
        #expect(try Self.agree(".a[-4]", json).get() == .null)
        #expect(try Self.agree(".a[3]", json).get() == .null)
        #expect(try Self.agree(".a[0.5]", json).get() == .null)
        #expect(try Self.agree(".a[1e300]", json).get() == .null)
        #expect(try Self.agree(".[0]", "[]").get() == .null)
        #expect(try Self.agree(".a[.i]", #"{"i":1,"a":[7,8]}"#).get() == .number(8))
        #expect(try Self.agree(#".a[.k]"#, #"{"k":"z","a":{"z":9}}"#).get() == .number(9))
        #expect(try Self.agree(".missing[3].x", json).get() == .null)
        #expect(throws: ExpressionError.self) { try Self.agree(".missing[3].x[true]", json).get() }
    }

    @Test func nullAndNonObjectErrorsMatch() throws {
        #expect(try Self.agree(".x", "null").get() == .null)
        #expect(try Self.agree(".[0]", "null").get() == .null)
        let member = try Self.agree(".s.x", #"{"s":"str"}"#)
        #expect(throws: ExpressionError.eval(#"cannot read member "x" of string"#, at: 2)) { try member.get() }
        let index = try Self.agree(".a[0]", #"{"a":{"b":1}}"#)
        #expect(throws: ExpressionError.eval("cannot index object with number", at: 2)) { try index.get() }
        #expect(throws: ExpressionError.self) { try Self.agree(".[null]", "null").get() }
        #expect(throws: ExpressionError.self) { try Self.agree(".a[true]", #"{"a":[1]}"#).get() }
        // A step after null still checks its key's type, as on the tree.
        #expect(throws: ExpressionError.self) { try Self.agree(".m[true]", "{}").get() }
        #expect(throws: ExpressionError.self) { try Self.agree(".x", "[1]").get() }
        #expect(throws: ExpressionError.self) { try Self.agree(".x", "12").get() }
    }

    @Test func meteringChargesTheSameSteps() throws {
        let wide = #"{"a":1,"b":2,"c":3,"d":4,"a":5}"#
        try Self.agree(".a", wide)
        try Self.agree(".a + .b * 2 > 3 && .c != null", wide)
        // Five members cost five steps: under a budget of 6, `.a` (2 + 5) passes its limit.
        let limited = try Self.agree(".a", wide, budget: ExpressionBudget(maxSteps: 6))
        #expect(throws: ExpressionError.self) { try limited.get() }
        #expect(try Self.agree(".a", wide, budget: ExpressionBudget(maxSteps: 7)).get() == .number(5))
        // A whole-value read decodes: the same as on the tree.
        try Self.agree("keys(.)", wide)
        try Self.agree(". == {\"a\":5}", wide)
        #expect(try !Expression.compile(".a.b[0]", variables: []).readsWholeInput)
        #expect(try Expression.compile("len(.)", variables: []).readsWholeInput)
    }

    @Test func whitespaceAroundEverything() throws {
        let json = "  {\n \"a\" : [ 1 , { \"b\" : \"x\" } ] ,\t\"c\" : true , \"n\" : 12 }  "
        #expect(try Self.agree(".a[1].b", json).get() == .string("x"))
        #expect(try Self.agree(".c", json).get() == .bool(true))
        #expect(try Self.agree(".n", json).get() == .number(12))
        #expect(try Self.agree(".a[-1]", json).get() == T.object([("b", .string("x"))]))
    }

    typealias T = ExpressionTesting

    @Test func aNumberOutOfRangeFailsOnlyWhereItIsRead() throws {
        let json = #"{"big":1e999,"x":1,"list":[2e400]}"#
        let raw = try RawJSON(validating: json)
        #expect(throws: JSONError.self) { try raw.decoded() }
        #expect(try Expression.compile(".x", variables: []).evaluate(reading: Payload(raw: raw)) == .number(1))
        let big = try Expression.compile(".big", variables: [])
        #expect(throws: ExpressionError.eval("cannot decode the value: number out of range at byte 7", at: 0)) {
            try big.evaluate(reading: Payload(raw: raw))
        }
        #expect(throws: ExpressionError.self) {
            try Expression.compile(".list", variables: []).evaluate(reading: Payload(raw: raw))
        }
        // Projected, it is never decoded: its bytes pass as they are.
        #expect(try big.project(raw)?.description == "1e999")
    }

    @Test func projectionsAreSlicesOfTheBytes() throws {
        let raw = try RawJSON(validating: #"{"load":0.95, "p": [1, 2.0, "\u00e9"], "s":"~T1~pad"}"#)
        #expect(try Expression.compile(".p", variables: []).project(raw)?.description == #"[1, 2.0, "\u00e9"]"#)
        #expect(try Expression.compile(".s", variables: []).project(raw)?.description == #""~T1~pad""#)
        #expect(try Expression.compile(".p[-1]", variables: []).project(raw)?.description == #""\u00e9""#)
        #expect(try Expression.compile(".missing", variables: []).project(raw)?.description == "null")
        #expect(try Expression.compile(".load > 0.9", variables: []).project(raw) == nil)
        #expect(try Expression.compile(".", variables: []).project(raw) == nil)
        #expect(throws: ExpressionError.self) { try Expression.compile(".s.x", variables: []).project(raw) }
    }

    @Test func aChainProjectsWithoutDecoding() throws {
        let h = StageHarness()
        try h.run(#"[{"op":"filter","expr":".load > 0.9"},{"op":"map","expr":".p"}]"#)
        try h.pub([
            #"{"load":0.95,"p":"~T1~pad"}"#, #"{"load":0.5,"p":"no"}"#, #"{"p":{"k": 1.0},"load":1,"big":1e999}"#,
        ])
        #expect(h.values() == [#""~T1~pad""#, #"{"k": 1.0}"#])
        // Read whole, the same value fails as before.
        let whole = StageHarness()
        try whole.run(#"[{"op":"map","expr":"keys(.)"}]"#)
        try whole.pub(#"{"big":1e999}"#)
        #expect(whole.values().first?.hasPrefix("error eval 0 map: cannot decode the value") == true)
    }

    @Test func aFilterOnABarePathTestsTheSlice() throws {
        let h = StageHarness()
        try h.run(#"[{"op":"filter","expr":".on"}]"#)
        try h.pub([
            #"{"on":true,"v":1}"#, #"{"on":false,"v":2}"#, #"{"on":null,"v":3}"#, #"{"v":4}"#, #"{"on":0,"v":5}"#,
        ])
        #expect(h.values() == [#"{"on":true,"v":1}"#, #"{"on":0,"v":5}"#])
    }

    /// Every accepted document of the JSON test suite, under fixed paths and a path to each of
    /// its members and items (two levels deep): lazy and full evaluation agree on the value or
    /// error and on the steps, and a projection's bytes decode to the full value. Documents
    /// whose full decode fails (a number out of range) are the one intended difference.
    @Test func lazyAgreesWithFullOnTheJSONSuite() throws {
        let cases = try JSONTestSuite.cases().filter { $0.name.hasPrefix("y_") }
        #expect(cases.count >= 95)
        var checked = 0
        for item in cases {
            let raw = try item.bytes.withUnsafeBytes { bytes throws(JSONError) in try RawJSON(validating: bytes) }
            guard let tree = try? raw.decoded() else { continue }
            var sources = [
                ".", ".[0]", ".[-1]", ".[1]", ".[0][0]", ".a", #".[""]"#, ".a.b", ".[0].a", ".x[0]", ".[.a]",
            ]
            sources += Self.paths(into: tree, from: ".", depth: 2)
            for source in sources {
                let compiled = try Expression.compile(source, variables: [])
                let full = Self.outcome(compiled, .tree(tree))
                for lazy in Self.lazyOutcomes(compiled, raw) {
                    #expect(lazy.result == full.result, "\(source) on \(item.name)")
                    #expect(lazy.steps == full.steps, "steps of \(source) on \(item.name)")
                }
                if case .success(let value) = full.result, let slice = try compiled.project(raw) {
                    #expect(try slice.decoded() == value, "projection \(source) on \(item.name)")
                }
                checked += 1
            }
        }
        #expect(checked > 500)
    }

    /// A path to every member and item of `value` (and theirs, `depth` levels down).
    static func paths(into value: JSONValue, from prefix: String, depth: Int) -> [String] {
        guard depth > 0 else { return [] }
        var paths: [String] = []
        switch value {
        case .object(let object):
            for member in object.members {
                let path = prefix + "[" + RawJSON(encoding: .string(member.key)).description + "]"
                paths.append(path)
                paths += Self.paths(into: member.value, from: path, depth: depth - 1)
            }
        case .array(let items):
            for (offset, item) in items.enumerated() {
                paths += [prefix + "[\(offset)]", prefix + "[\(offset - items.count)]"]
                paths += Self.paths(into: item, from: prefix + "[\(offset)]", depth: depth - 1)
            }
        default: break
        }
        return paths
    }
}
