import RunnelExpression
import RunnelServer
import Testing

@Suite("Expression functions")
struct ExpressionFunctionTests {
    typealias T = ExpressionTesting

    @Test func len() throws {
        #expect(try T.run("len(\"héllo\")") == .number(5))  // Unicode scalars, not bytes
        #expect(try T.run("len(\"😀\")") == .number(1))
        #expect(try T.run("len(\"e\\u0301\")") == .number(2))  // scalars, not characters
        #expect(try T.run("len(\"\")") == .number(0))
        #expect(try T.run("len(.items)", T.document) == .number(3))
        #expect(try T.run("len(.)", T.document) == .number(6))
        #expect(try T.run("len({\"a\": 1, \"a\": 2})") == .number(1))  // distinct keys
        for bad in ["len(1)", "len(null)", "len(true)"] {
            #expect(try T.evalError(bad)?.message.hasPrefix("len() needs") == true, "\(bad)")
        }
    }

    @Test func numericFunctions() throws {
        #expect(try T.run("abs(-3.5)") == .number(3.5))
        #expect(try T.run("abs(2)") == .number(2))
        #expect(try T.run("floor(2.7)") == .number(2))
        #expect(try T.run("floor(-2.2)") == .number(-3))
        #expect(try T.run("ceil(2.2)") == .number(3))
        #expect(try T.run("ceil(-2.7)") == .number(-2))
        #expect(try T.run("round(2.5)") == .number(3))  // half away from zero
        #expect(try T.run("round(-2.5)") == .number(-3))
        #expect(try T.run("round(2.4999)") == .number(2))
        #expect(try T.run("round(0.93 * 100)") == .number(93))
        #expect(try T.run("min(3, -1)") == .number(-1))
        #expect(try T.run("max(3, -1)") == .number(3))
        #expect(try T.run("max(.a.b, .items[0])", T.document) == .number(10))
        for bad in ["abs(\"1\")", "floor(null)", "ceil([])", "round(true)", "min(1, \"2\")", "max(\"a\", \"b\")"] {
            #expect(try T.evalError(bad)?.kind == .evaluation, "\(bad)")
        }
    }

    @Test func str() throws {
        #expect(try T.run("str(\"as is\")") == .string("as is"))
        #expect(try T.run("str(12)") == .string("12"))
        #expect(try T.run("str(1.5)") == .string("1.5"))
        #expect(try T.run("str(-3)") == .string("-3"))
        #expect(try T.run("str(true)") == .string("true"))
        #expect(try T.run("str(null)") == .string("null"))
        #expect(try T.run("str([1, \"a\", [null]])") == .string("[1,\"a\",[null]]"))
        #expect(try T.run("str({\"k\": \"q\\\"\\n\\u0001\", \"e\": {}})") == .string(#"{"k":"q\"\n\u0001","e":{}}"#))
        #expect(try T.run("str([\"é\"])") == .string("[\"é\"]"))
        #expect(try T.run("\"n=\" + str(.a.b)", T.document) == .string("n=2"))
    }

    @Test func num() throws {
        #expect(try T.run("num(5)") == .number(5))
        #expect(try T.run("num(\"42\")") == .number(42))
        #expect(try T.run("num(\"-1.5e2\")") == .number(-150))
        #expect(try T.run("num(\" 7 \")") == .number(7))
        #expect(try T.run("num(true)") == .number(1))
        #expect(try T.run("num(false)") == .number(0))
        for bad in [
            "num(\"\")", "num(\"abc\")", "num(\"1x\")", "num(\"+1\")", "num(\"01\")", "num(\".5\")", "num(\"inf\")",
            "num(\"nan\")", "num(\"0x10\")", "num(\"1e999\")", "num(null)", "num([1])", "num({})",
        ] {
            #expect(try T.evalError(bad)?.kind == .evaluation, "\(bad)")
        }
        #expect(try T.evalError("num(\"abc\")")?.message == "num() cannot read a number from \"abc\"")
    }

    @Test func caseMapping() throws {
        #expect(try T.run("lower(\"HeLLo É\")") == .string("hello é"))
        #expect(try T.run("upper(\"straße\")") == .string("STRASSE"))
        #expect(try T.evalError("lower(1)")?.kind == .evaluation)
        #expect(try T.evalError("upper(null)")?.kind == .evaluation)
    }

    @Test func contains() throws {
        #expect(try T.run("contains(\"hello world\", \"o w\")") == .bool(true))
        #expect(try T.run("contains(\"hello\", \"\")") == .bool(true))
        #expect(try T.run("contains(\"hello\", \"hello!\")") == .bool(false))
        #expect(try T.run("contains(\"aaab\", \"aab\")") == .bool(true))  // needs the KMP fallback
        #expect(try T.run("contains(\"abababc\", \"ababc\")") == .bool(true))
        #expect(try T.run("contains(\"ababab\", \"abc\")") == .bool(false))
        #expect(try T.run("contains(\"héllo\", \"él\")") == .bool(true))
        #expect(try T.run("contains(.items, 20)", T.document) == .bool(true))
        #expect(try T.run("contains(.items, 25)", T.document) == .bool(false))
        #expect(try T.run("contains([[1, {\"a\": 2}]], [1, {\"a\": 2}])") == .bool(true))  // structural
        #expect(try T.run("contains(., \"odd key\")", T.document) == .bool(true))
        #expect(try T.run("contains(., \"b\")", T.document) == .bool(false))
        for bad in ["contains(1, 1)", "contains(\"a\", 1)", "contains({}, 1)", "contains(null, \"a\")"] {
            #expect(try T.evalError(bad)?.kind == .evaluation, "\(bad)")
        }
    }

    @Test func startsWithAndEndsWith() throws {
        #expect(try T.run("startsWith(\"sensors.a\", \"sensors.\")") == .bool(true))
        #expect(try T.run("startsWith(\"sensors\", \"sensors.\")") == .bool(false))
        #expect(try T.run("startsWith(\"x\", \"\")") == .bool(true))
        #expect(try T.run("endsWith(\"a.temp\", \".temp\")") == .bool(true))
        #expect(try T.run("endsWith(\"temp\", \"a.temp\")") == .bool(false))
        #expect(try T.run("endsWith(\"héllo\", \"llo\")") == .bool(true))
        #expect(
            try T.run("endsWith($subject, \".temp\")", bindings: ExpressionBindings(subject: "k.temp")) == .bool(true))
        #expect(try T.evalError("startsWith(1, \"a\")")?.kind == .evaluation)
        #expect(try T.evalError("endsWith(\"a\", null)")?.kind == .evaluation)
    }

    @Test func keysAndHas() throws {
        #expect(try T.run("keys({\"b\": 1, \"a\": 2, \"b\": 3})") == .array([.string("b"), .string("a")]))
        #expect(try T.run("keys({})") == .array([]))
        #expect(try T.evalError("keys([1])")?.kind == .evaluation)
        #expect(try T.run("has(., \"n\")", T.document) == .bool(true))  // present even though null
        #expect(try T.run("has(., \"zz\")", T.document) == .bool(false))
        #expect(try T.run("has(.items, 2)", T.document) == .bool(true))
        #expect(try T.run("has(.items, 3)", T.document) == .bool(false))
        #expect(try T.run("has(.items, -1)", T.document) == .bool(true))
        #expect(try T.run("has(.items, 0.5)", T.document) == .bool(false))
        for bad in ["has(., 1)", "has(.items, \"a\")", "has(null, \"a\")", "has(\"s\", 0)"] {
            #expect(try T.evalError(bad, T.document)?.kind == .evaluation, "\(bad)")
        }
    }

    @Test func typeNames() throws {
        #expect(try T.run("type(null)") == .string("null"))
        #expect(try T.run("type(false)") == .string("boolean"))
        #expect(try T.run("type(1)") == .string("number"))
        #expect(try T.run("type(\"\")") == .string("string"))
        #expect(try T.run("type([])") == .string("array"))
        #expect(try T.run("type(.)", T.document) == .string("object"))
        #expect(try T.run("type(.missing)", T.document) == .string("null"))
    }

    @Test func nowReadsTheInjectedClock() throws {
        #expect(try T.run("now()") == .number(ExpressionTesting.fixedNow))
        #expect(try T.run("now() - 0.25") == .number(1_700_000_000))
        let system = try Expression.compile("now()", variables: [])
        guard case .number(let seconds) = try system.evaluate(.null) else { Issue.record("not a number"); return }
        #expect(seconds > 1_600_000_000)  // the real clock: some time after 2020
    }

    @Test func errorsPointAtTheCall() throws {
        let error = try T.evalError("1 + len(5)")
        #expect(error?.position == 4)
        #expect(error?.message == "len() needs a string, array or object, got number")
    }
}
