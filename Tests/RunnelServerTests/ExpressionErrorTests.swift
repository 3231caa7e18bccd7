import RunnelExpression
import RunnelJSON
import RunnelServer
import Testing

@Suite("Expression compile errors and limits")
struct ExpressionErrorTests {
    typealias T = ExpressionTesting

    /// (source, position, message) for each kind of compile error.
    static let cases: [(String, Int, String)] = [
        ("", 0, "unexpected end of expression"),
        ("1 +", 3, "unexpected end of expression"),
        ("1 2", 2, "unexpected number"),
        ("(1", 2, "expected ')' but found end of expression"),
        ("[1, 2", 5, "expected ']' or ',' but found end of expression"),
        ("{\"a\" 1}", 5, "expected ':' but found number"),
        ("{1: 2}", 1, "expected an object key but found number"),
        ("true ? 1", 8, "expected ':' but found end of expression"),
        ("foo(1)", 0, "unknown function 'foo'"),
        ("len()", 0, "len() takes 1 argument, not 0"),
        ("min(1)", 0, "min() takes 2 arguments, not 1"),
        ("now(1)", 0, "now() takes 0 arguments, not 1"),
        ("  abs(1, 2)", 2, "abs() takes 1 argument, not 2"),
        ("foo", 0, "unknown name 'foo' (a member is written '.foo')"),
        ("..a", 1, "unexpected '.'"),
        (".a.", 3, "expected a name or '[' after '.' but found end of expression"),
        (".a.1", 3, "expected a name or '[' after '.' but found number"),
        ("1 = 1", 2, "unexpected character '='"),
        ("1 & 1", 2, "unexpected character '&'"),
        ("a | b", 2, "unexpected character '|'"),
        ("#", 0, "unexpected character '#'"),
        ("1 + é", 4, "unexpected character"),
        ("01", 0, "malformed number"),
        ("1.", 0, "malformed number"),
        ("1e", 0, "malformed number"),
        ("1.5.2", 0, "malformed number"),
        ("12abc", 0, "malformed number"),
        ("1e999", 0, "number out of range"),
        ("\"abc", 0, "unterminated string"),
        ("x + \"a\\q\"", 6, "invalid escape in string"),
        ("\"\\u12\"", 1, "invalid \\u escape in string"),
        ("\"\\ud800\"", 1, "lone surrogate in string"),
        ("\"\\udc00\"", 1, "lone surrogate in string"),
        ("\"\\ud800\\u0041\"", 1, "lone surrogate in string"),
        ("\"a\nb\"", 2, "control character in string"),
        ("[1,]", 3, "unexpected ']'"),
        (")", 0, "unexpected ')'"),
    ]

    @Test func compileErrorsCarryMessageAndPosition() {
        for (source, position, message) in Self.cases {
            let error = T.compileError(source)
            #expect(error?.kind == .badExpression, "\(source)")
            #expect(error?.position == position, "\(source)")
            #expect(error?.message == message, "\(source)")
        }
    }

    @Test func sourceLengthLimit() {
        let exact = String(repeating: " ", count: 4094) + "42"
        #expect(T.compileError(exact) == nil)
        let over = String(repeating: " ", count: 4095) + "42"
        let error = T.compileError(over)
        #expect(error?.kind == .badExpression)
        #expect(error?.message == "expression is 4097 bytes, over the limit of 4096")
        // The limit counts UTF-8 bytes and is configurable.
        #expect((try? Expression.compile("\"éé\"", variables: [], maxBytes: 5)) == nil)
        #expect((try? Expression.compile("\"éé\"", variables: [], maxBytes: 6)) != nil)
    }

    @Test func nestingLimit() throws {
        func parens(_ depth: Int) -> String {
            String(repeating: "(", count: depth - 1) + "1" + String(repeating: ")", count: depth - 1)
        }
        // The whole expression is level 1, so 63 groups reach 64.
        #expect(try T.compile(parens(64)).constantValue == .number(1))
        let error = T.compileError(parens(65))
        #expect(error?.kind == .badExpression)
        #expect(error?.message == "expression nested deeper than 64")
        #expect(error?.position == 64)
        #expect(T.compileError(String(repeating: "[", count: 64) + String(repeating: "]", count: 64)) == nil)
        #expect(T.compileError(String(repeating: "[", count: 65) + String(repeating: "]", count: 65)) != nil)
        #expect(T.compileError(String(repeating: "!", count: 64) + "true") != nil)
        #expect(T.compileError(String(repeating: "-", count: 63) + "1") == nil)
        #expect(T.compileError(String(repeating: "abs(", count: 70) + "1" + String(repeating: ")", count: 70)) != nil)
        #expect(T.compileError(String(repeating: "true ? 1 : ", count: 70) + "2") != nil)
        #expect((try? Expression.compile("((1))", variables: [], maxDepth: 2)) == nil)
        #expect((try? Expression.compile("(1)", variables: [], maxDepth: 2)) != nil)
    }

    @Test func longFlatChainsAreNotNesting() throws {
        // Chains and paths are stored flat: thousands of links, no nesting error, no deep recursion.
        let sum = Array(repeating: ".", count: 1300).joined(separator: "+")
        #expect(try T.compile(sum).evaluate(.number(1)) == .number(1300))
        let path = String(repeating: ".a", count: 2000)
        #expect(try T.compile(path).evaluate(T.object([("a", .null)])) == .null)
        let ors = Array(repeating: ".", count: 800).joined(separator: " || ")
        #expect(try T.compile(ors).evaluate(.null) == .bool(false))
    }

    @Test func evalErrorsAreNotCompileErrors() throws {
        // Type errors that depend on the value surface only at run time, as `eval`.
        let compiled = try T.compile(".x + 1")
        #expect(try compiled.evaluate(T.object([("x", .number(1))])) == .number(2))
        do {
            _ = try compiled.evaluate(T.object([("x", .string("a"))]))
            Issue.record("expected an eval error")
        } catch {
            #expect(error.code == "eval")
            #expect(error.position == 3)
            #expect(error.message == "cannot apply '+' to string and number")
            #expect(error.description == "eval at 3: cannot apply '+' to string and number")
        }
    }
}

@Suite("Expression size limits")
struct ExpressionSizeLimitTests {
    typealias T = ExpressionTesting

    /// A 1 MiB string: a few references to it reach the evaluation budget.
    static let big = JSONValue.string(String(repeating: "x", count: 1024 * 1024))

    @Test func concatenationIsBounded() throws {
        // Fifteen copies: 15 MiB built (16 bytes of string a step: 983,040 steps).
        let fifteen = Array(repeating: ".", count: 15).joined(separator: " + ")
        guard case .string(let built) = try T.run(fifteen, Self.big) else { Issue.record("not a string"); return }
        #expect(built.utf8.count == 15 * 1024 * 1024)
        let sixteen = try T.evalError(fifteen + " + .", Self.big)
        #expect(sixteen?.kind == .limit)
        #expect(sixteen?.code == "eval")
        #expect(sixteen?.position == 15 * 4 - 2)  // the fifteenth '+', before it copies anything
        #expect(sixteen?.message == "more than 1000000 steps (max_eval_steps)")
    }

    @Test func concatenationIsBoundedByBytes() throws {
        let manySteps = ExpressionBudget(maxSteps: 1_000_000_000)
        let sixteen = Array(repeating: ".", count: 16).joined(separator: " + ")
        let fits = try Expression.compile(sixteen, variables: [], budget: manySteps)
        guard case .string(let built) = try fits.evaluate(Self.big) else { Issue.record("not a string"); return }
        #expect(built.utf8.count == 16 * 1024 * 1024)
        let over = try Expression.compile(sixteen + " + .", variables: [], budget: manySteps)
        #expect(throws: ExpressionError(.limit, "more than 16777216 bytes built (max_eval_bytes)", at: 16 * 4 - 2)) {
            try over.evaluate(Self.big)
        }
    }

    @Test func strIsBounded() throws {
        let fifteen = "str([" + Array(repeating: ".", count: 15).joined(separator: ", ") + "])"
        guard case .string(let text) = try T.run(fifteen, Self.big) else { Issue.record("not a string"); return }
        #expect(text.utf8.count == 15 * (1024 * 1024 + 3) + 1)
        let seventeen = "str([" + Array(repeating: ".", count: 17).joined(separator: ", ") + "])"
        #expect(try T.evalError(seventeen, Self.big)?.kind == .limit)
    }
}
