import RunnelExpression
import RunnelServer
import Testing

@Suite("Expression operators")
struct ExpressionOperatorTests {
    typealias T = ExpressionTesting

    @Test func arithmeticOnNumbers() throws {
        #expect(try T.run("1 + 2") == .number(3))
        #expect(try T.run("10 - 4") == .number(6))
        #expect(try T.run("6 * 7") == .number(42))
        #expect(try T.run("7 / 2") == .number(3.5))
        #expect(try T.run("4 / 2") == .number(2))
        #expect(try T.run("7 % 3") == .number(1))
        #expect(try T.run("-7 % 2") == .number(-1))
        #expect(try T.run("5.5 % 2") == .number(1.5))
        #expect(try T.run("0.1 + 0.2") == .number(0.1 + 0.2))
        #expect(try T.run("1e3") == .number(1000))
        #expect(try T.run("2.5E-1") == .number(0.25))
        #expect(try T.run("1e+2") == .number(100))
    }

    @Test func precedenceLoosestFirst() throws {
        #expect(try T.run("1 + 2 * 3") == .number(7))
        #expect(try T.run("(1 + 2) * 3") == .number(9))
        #expect(try T.run("10 - 4 - 3") == .number(3))  // left-associative
        #expect(try T.run("100 / 10 / 5") == .number(2))
        #expect(try T.run("2 * 3 % 4") == .number(2))
        #expect(try T.run("1 + 2 == 3") == .bool(true))
        #expect(try T.run("1 < 2 == true") == .bool(true))
        #expect(try T.run("1 == 1 && 2 == 3") == .bool(false))
        #expect(try T.run("true || false && false") == .bool(true))  // && binds tighter
        #expect(try T.run("(true || false) && false") == .bool(false))
        #expect(try T.run("false ? 1 : 2 + 3") == .number(5))
        #expect(try T.run("1 > 2 || 3 > 2 ? \"yes\" : \"no\"") == .string("yes"))
        #expect(try T.run("!true == false") == .bool(true))  // prefix binds tighter than ==
        #expect(try T.run("-2 * 3") == .number(-6))
        #expect(try T.run("-.a.b * 2", T.document) == .number(-4))  // paths bind tighter than prefix
    }

    @Test func unaryMinusAndSubtraction() throws {
        #expect(try T.run("3 - -2") == .number(5))
        #expect(try T.run("3-2") == .number(1))
        #expect(try T.run("- 3") == .number(-3))
        #expect(try T.run("--3") == .number(3))
        #expect(try T.run("-.a.b", T.document) == .number(-2))
        #expect(try T.run("1 - 2 - 3") == .number(-4))
        let negativeZero = try T.run("-0")
        guard case .number(let zero) = negativeZero else { Issue.record("not a number"); return }
        #expect(zero == 0 && zero.sign == .minus)
        #expect(try T.run("-0 == 0") == .bool(true))
        #expect(try T.run("str(-0)") == .string("0"))
    }

    @Test func integralResultsPrintWithoutFraction() throws {
        #expect(try T.run("str(4 / 2)") == .string("2"))
        #expect(try T.run("str(7 / 2)") == .string("3.5"))
        #expect(try T.run("str(1e3)") == .string("1000"))
        #expect(try T.run("str(0.1 + 0.2)") == .string("0.30000000000000004"))
        #expect(try T.run("str(9007199254740992)") == .string("9007199254740992"))
        #expect(try T.run("str(1e300)") == .string("1e+300"))
    }

    @Test func stringAndArrayConcatenation() throws {
        #expect(try T.run("\"ab\" + \"cd\"") == .string("abcd"))
        #expect(try T.run(".s + \"!\"", T.document) == .string("héllo!"))
        #expect(try T.run("\"\" + \"\"") == .string(""))
        #expect(try T.run("[1] + [2, 3] + []") == .array([.number(1), .number(2), .number(3)]))
        #expect(try T.run(".items + [.a.b]", T.document) == .array([10, 20, 30, 2].map { .number($0) }))
        // A long chain grows one buffer; it must give the full text.
        let chain = Array(repeating: "\"x\"", count: 500).joined(separator: " + ")
        #expect(try T.run(chain) == .string(String(repeating: "x", count: 500)))
    }

    @Test func mixedTypesAreEvalErrors() throws {
        for source in [
            "\"a\" + 1", "1 + \"a\"", "true + true", "null + null", "{} + {}", "[1] + 1", "\"a\" - \"a\"",
            "[] * 2", "1 < \"a\"", "{} < {}", "[] < []", "true < false", "null <= null", "\"a\" >= 1",
            "-\"a\"", "-null", "-[1]",
        ] {
            let error = try T.evalError(source)
            #expect(error?.kind == .evaluation, "\(source)")
            #expect(error?.code == "eval", "\(source)")
        }
    }

    @Test func divisionByZeroAndNonFiniteResults() throws {
        #expect(try T.evalError("1 / 0")?.message == "division by zero")
        #expect(try T.evalError("1 % 0")?.message == "division by zero")
        #expect(try T.evalError("1 / -0")?.message == "division by zero")
        #expect(try T.evalError("0 / 0")?.message == "division by zero")
        #expect(try T.evalError("1e308 * 10")?.kind == .evaluation)
        #expect(try T.evalError("1e308 + 1e308")?.kind == .evaluation)
        #expect(try T.evalError("-1e308 - 1e308")?.kind == .evaluation)
        #expect(try T.evalError(".a.b / 0", T.document)?.position == 5)
    }

    @Test func orderingOfNumbersAndStrings() throws {
        #expect(try T.run("1 < 2") == .bool(true))
        #expect(try T.run("2 < 1") == .bool(false))
        #expect(try T.run("2 <= 2") == .bool(true))
        #expect(try T.run("3 > 2") == .bool(true))
        #expect(try T.run("2 >= 3") == .bool(false))
        #expect(try T.run("2 >= 2") == .bool(true))
        #expect(try T.run("-1 < 0") == .bool(true))
        #expect(try T.run("\"abc\" < \"abd\"") == .bool(true))
        #expect(try T.run("\"ab\" < \"abc\"") == .bool(true))
        #expect(try T.run("\"b\" > \"abc\"") == .bool(true))
        #expect(try T.run("\"Z\" < \"a\"") == .bool(true))  // by scalar value, not locale
        #expect(try T.run("\"é\" > \"z\"") == .bool(true))
        #expect(try T.run("\"abc\" <= \"abc\"") == .bool(true))
        #expect(try T.run("\"abc\" >= \"abc\"") == .bool(true))
        #expect(try T.run("\"abc\" > \"abc\"") == .bool(false))
    }

    @Test func deepEquality() throws {
        #expect(try T.run("1 == 1.0") == .bool(true))
        #expect(try T.run("1 != 2") == .bool(true))
        #expect(try T.run("\"a\" == \"a\"") == .bool(true))
        #expect(try T.run("1 == \"1\"") == .bool(false))
        #expect(try T.run("null == false") == .bool(false))
        #expect(try T.run("null == null") == .bool(true))
        #expect(try T.run("[1, [2, {\"a\": 3}]] == [1, [2, {\"a\": 3}]]") == .bool(true))
        #expect(try T.run("[1, 2] == [2, 1]") == .bool(false))
        #expect(try T.run("{\"a\": 1, \"b\": 2} == {\"b\": 2, \"a\": 1}") == .bool(true))  // key order ignored
        #expect(try T.run("{\"a\": 1} == {\"a\": 1, \"b\": null}") == .bool(false))
        #expect(try T.run(". == {\"a\": {\"b\": 2}}", T.object([("a", T.object([("b", .number(2))]))])) == .bool(true))
        #expect(try T.run(".a != {\"b\": 2}", T.document) == .bool(false))
        #expect(try T.run("[] == {}") == .bool(false))
    }

    @Test func truthiness() throws {
        for (source, expected) in [
            ("!null", true), ("!false", true), ("!true", false), ("!0", false), ("!\"\"", false),
            ("![]", false), ("!{}", false), ("!!1", true),
        ] {
            #expect(try T.run(source) == .bool(expected), "\(source)")
        }
        let compiled = try T.compile(".n")
        #expect(try compiled.test(T.document) == false)
        #expect(try T.compile(".t").test(T.document) == true)
        #expect(try T.compile("0").test(.null) == true)
    }

    @Test func logicalOperatorsShortCircuitAndGiveBooleans() throws {
        #expect(try T.run("1 && \"x\"") == .bool(true))
        #expect(try T.run("null || 0") == .bool(true))
        #expect(try T.run("null || false") == .bool(false))
        #expect(try T.run("[] && null") == .bool(false))
        // The right side is not evaluated when the left decides: no division-by-zero error.
        #expect(try T.run("false && .x / 0 > 1", T.document) == .bool(false))
        #expect(try T.run("true || .x / 0 > 1", T.document) == .bool(true))
        #expect(try T.evalError("true && .a.b / 0 > 1", T.document)?.message == "division by zero")
        #expect(try T.run("false || false || 1") == .bool(true))
        #expect(try T.run("1 && 1 && null") == .bool(false))
    }

    @Test func ternary() throws {
        #expect(try T.run("true ? 1 : 2") == .number(1))
        #expect(try T.run("null ? 1 : 2") == .number(2))
        #expect(try T.run("0 ? 1 : 2") == .number(1))
        #expect(try T.run("false ? 1 : true ? 2 : 3") == .number(2))  // right-associative
        #expect(try T.run("true ? false ? 1 : 2 : 3") == .number(2))
        #expect(try T.run(".a.b > 1 ? \"big\" : \"small\"", T.document) == .string("big"))
        // Only the chosen branch is evaluated.
        #expect(try T.run(".t ? 1 : 1 / 0", T.document) == .number(1))
    }

    @Test func foldedConstantsMatchEvaluatedOnes() throws {
        #expect(try T.compile("1 + 2 * 3").constantValue == .number(7))
        #expect(try T.compile("[1, -2][-1]").constantValue == .number(-2))
        #expect(try T.compile("{\"k\": \"a\" + \"b\"}").constantValue == T.object([("k", .string("ab"))]))
        #expect(try T.compile(". + 1").constantValue == nil)
        #expect(try T.compile("now()").constantValue == nil)
        // An error found while folding waits for run time, with its position.
        let error = try T.evalError("1 + (2 / 0)")
        #expect(error?.kind == .evaluation && error?.position == 7)
    }
}
