import RunnelExpression
import RunnelServer
import Testing

@Suite("Expression paths, literals and variables")
struct ExpressionPathTests {
    typealias T = ExpressionTesting

    @Test func identityAndMembers() throws {
        #expect(try T.run(".", .number(5)) == .number(5))
        #expect(try T.run(".", T.document) == T.document)
        #expect(try T.run(".a.b", T.document) == .number(2))
        #expect(try T.run(".a", T.document) == T.object([("b", .number(2))]))
        #expect(try T.run(". a . b", T.document) == .number(2))  // spaces between steps are allowed
        #expect(try T.run(".[\"odd key\"]", T.document) == .string("yes"))
        #expect(try T.run(".a[\"b\"]", T.document) == .number(2))
        #expect(try T.run(".a.[\"b\"]", T.document) == .number(2))
        #expect(try T.run(".true", T.object([("true", .number(1))])) == .number(1))  // keywords as names
    }

    @Test func arrayIndexes() throws {
        #expect(try T.run(".items[0]", T.document) == .number(10))
        #expect(try T.run(".items[2]", T.document) == .number(30))
        #expect(try T.run(".items[-1]", T.document) == .number(30))
        #expect(try T.run(".items[-3]", T.document) == .number(10))
        #expect(try T.run(".[1]", .array([.string("x"), .string("y")])) == .string("y"))
        #expect(try T.run(".[-1]", .array([.string("x"), .string("y")])) == .string("y"))
        #expect(try T.run(".items[.a.b]", T.document) == .number(30))  // index sees the same `.`
        #expect(try T.run(".items[1 + 1]", T.document) == .number(30))
        #expect(try T.run("[1, 2, 3][1]") == .number(2))
        #expect(try T.run("[[1, 2], [3, 4]][1][0]") == .number(3))
        #expect(try T.run("(.a).b", T.document) == .number(2))
        #expect(try T.run("{\"x\": [5]}.x[0]") == .number(5))
        #expect(try T.run(".[.k]", T.object([("k", .string("v")), ("v", .number(9))])) == .number(9))
    }

    @Test func missingKeysAndIndexesGiveNull() throws {
        #expect(try T.run(".missing", T.document) == .null)
        #expect(try T.run(".missing.deeper[3].x", T.document) == .null)  // null propagates
        #expect(try T.run(".items[3]", T.document) == .null)
        #expect(try T.run(".items[-4]", T.document) == .null)
        #expect(try T.run(".items[1e300]", T.document) == .null)
        #expect(try T.run(".items[0.5]", T.document) == .null)  // a fraction is never an index
        #expect(try T.run(".n.x", T.document) == .null)
        #expect(try T.run(".x", .null) == .null)
        #expect(try T.run(".[0]", .null) == .null)
        #expect(try T.run("[][0]") == .null)
        #expect(try T.run(".[\"nope\"]", T.document) == .null)
    }

    @Test func pathsIntoScalarsAreEvalErrors() throws {
        let member = try T.evalError(".s.x", T.document)
        #expect(member?.kind == .evaluation)
        #expect(member?.position == 2)
        #expect(member?.message == "cannot read member \"x\" of string")
        #expect(try T.evalError(".x", .number(1))?.position == 0)
        #expect(try T.evalError(".t.x", T.document)?.kind == .evaluation)
        #expect(try T.evalError(".items.x", T.document)?.kind == .evaluation)  // arrays have no members
        #expect(try T.evalError(".items[\"x\"]", T.document)?.message == "cannot read member \"x\" of array")
        let index = try T.evalError(".items[.s]", T.document)
        #expect(index?.message == "cannot index array with string")
        #expect(index?.position == 6)
        #expect(try T.evalError(".a[0]", T.document)?.message == "cannot index object with number")
        #expect(try T.evalError(".s[0]", T.document)?.message == "cannot index string with number")
        #expect(try T.evalError(".items[true]", T.document)?.kind == .evaluation)
        #expect(try T.evalError(".[null]", .null)?.kind == .evaluation)
    }

    @Test func literals() throws {
        #expect(try T.run("true") == .bool(true))
        #expect(try T.run("false") == .bool(false))
        #expect(try T.run("null") == .null)
        #expect(try T.run("0") == .number(0))
        #expect(try T.run("12.5") == .number(12.5))
        #expect(try T.run("[]") == .array([]))
        #expect(
            try T.run("[1, \"a\", null, [true]]") == .array([.number(1), .string("a"), .null, .array([.bool(true)])]))
        #expect(try T.run("{}") == T.object([]))
        #expect(
            try T.run("{\"h\": .a.b, \"pct\": .items[0] * 10}", T.document)
                == T.object([("h", .number(2)), ("pct", .number(100))]))
        #expect(try T.run("{k: 1}") == T.object([("k", .number(1))]))  // bare-name keys too
        // A repeated key keeps its last value.
        #expect(try T.run("{\"k\": 1, \"k\": 2}.k") == .number(2))
        #expect(try T.run("str({\"k\": 1, \"j\": 0, \"k\": 2})") == .string(#"{"k":2,"j":0}"#))
        let built = try T.run("{\"b\": 1, \"a\": 2}")
        guard case .object(let object) = built else { Issue.record("not an object"); return }
        #expect(object.keys == ["b", "a"])  // written order is kept
    }

    @Test func stringLiteralsUseJSONEscapes() throws {
        #expect(try T.run(#""a\"b""#) == .string("a\"b"))
        #expect(try T.run(#""\\ \/ \b \f \n \r \t""#) == .string("\\ / \u{08} \u{0C} \n \r \t"))
        #expect(try T.run(#""\u0041\u00e9\u20AC""#) == .string("Aé€"))
        #expect(try T.run(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try T.run("\"héllo 😀\"") == .string("héllo 😀"))
        #expect(try T.run(#""""#) == .string(""))
    }

    @Test func variables() throws {
        let bindings = ExpressionBindings(
            acc: .number(10), index: 3, prev: .string("p"), items: [.string("zero"), T.object([("a", .number(1))])],
            subject: "sensors.kitchen")
        #expect(try T.run("$acc + .", .number(5), bindings: bindings) == .number(15))
        #expect(try T.run("$index", bindings: bindings) == .number(3))
        #expect(try T.run("$prev", bindings: bindings) == .string("p"))
        #expect(try T.run("$0", bindings: bindings) == .string("zero"))
        #expect(try T.run("$1.a", bindings: bindings) == .number(1))
        #expect(try T.run("$9", bindings: bindings) == .null)  // a missing item is null
        #expect(try T.run("$subject", bindings: bindings) == .string("sensors.kitchen"))
        #expect(try T.run("$subject") == .null)
        // $subject is allowed with no variables bound.
        #expect(
            try Expression.compile("$subject", variables: []).evaluate(.null, bindings) == .string("sensors.kitchen"))
        // One digit may be bound on its own.
        #expect(try Expression.compile("$0", variables: ["0"]).evaluate(.null, bindings) == .string("zero"))
    }

    @Test func unboundVariablesAreCompileErrors() {
        let acc = T.compileError("1 + $acc", variables: ["index"])
        #expect(acc?.kind == .badExpression)
        #expect(acc?.code == "bad_expr")
        #expect(acc?.position == 4)
        #expect(acc?.message == "'$acc' is not bound by this stage")
        #expect(T.compileError("$index", variables: ["acc"]) != nil)
        #expect(T.compileError("$prev") != nil)
        #expect(T.compileError("$0") != nil)
        #expect(T.compileError("$1", variables: ["0"]) != nil)
        #expect(T.compileError("$10", variables: ["items"])?.message == "unknown variable '$10'")
        #expect(
            T.compileError("$foo", variables: ["acc", "index", "prev", "items"])?.message == "unknown variable '$foo'")
        #expect(T.compileError("$")?.position == 0)
        #expect(T.compileError("$acc", variables: ["acc"]) == nil)
    }
}
