import Testing

@testable import RunnelJSON

@Suite struct JSONParserTests {
    func parse(_ text: String, maxDepth: Int = JSONLimits.defaultMaxDepth) throws -> JSONValue {
        try JSONParser(maxDepth: maxDepth).parse(text)
    }

    @Test func parsesEveryKind() throws {
        let value = try parse(#" {"a": [1, -2.5, "x", null, true, false], "b": {}, "c": [] } "#)
        let expected = JSONValue.object(
            JSONObject([
                ("a", .array([.number(1), .number(-2.5), .string("x"), .null, .bool(true), .bool(false)])),
                ("b", .object(JSONObject())), ("c", .array([])),
            ]))
        #expect(value == expected)
        #expect(try parse("7") == .number(7))
        #expect(try parse("\"s\"") == .string("s"))
    }

    @Test func keepsMemberOrderAndLastDuplicateWins() throws {
        guard case .object(let object) = try parse(#"{"z":1,"a":2,"z":3}"#) else {
            Issue.record("not an object")
            return
        }
        #expect(object["z"] == .number(3))
        #expect(object.keys == ["z", "a"])
        #expect(object.members.count == 3)
    }

    @Test(arguments: [
        (#""\u00e9""#, "\u{E9}"), (#""\ud83d\ude00""#, "\u{1F600}"), (#""\uD83D\uDE00""#, "\u{1F600}"),
        (#""a\"b\\c\/d""#, "a\"b\\c/d"), (#""\b\f\n\r\t""#, "\u{8}\u{C}\n\r\t"), (#""\u0000""#, "\u{0}"),
        (#""\u20ac\u0041""#, "\u{20AC}A"), (#""\uffff""#, "\u{FFFF}"), (#""\udbff\udfff""#, "\u{10FFFF}"),
        ("\"caf\u{E9} \u{1F600}\"", "caf\u{E9} \u{1F600}"),
        (#""plain ascii that is long enough""#, "plain ascii that is long enough"),
    ])
    func unescapesStrings(_ json: String, _ expected: String) throws {
        #expect(try parse(json) == .string(expected))
    }

    @Test func unescapesKeys() throws {
        guard case .object(let object) = try parse(#"{"\u0061\n":1}"#) else {
            Issue.record("not an object")
            return
        }
        #expect(object["a\n"] == .number(1))
    }

    @Test(arguments: [
        "0", "-0", "1", "-1", "12345678901234", "123456789012345678", "9007199254740993", "0.1", "-0.5", "1e2", "1E+2",
        "1e-2", "3.14159", "2.5e-3", "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "123.456e-7",
        "0.30000000000000004", "1e22", "1e23", "9.999999999999999e22", "123456789012345.6", "1234567890123456.7",
        "4.35", "1e-400", "0.000000000000000000000000000001", "-237462374673276894279832749832423479823246327846",
        "0.95", "9007199254740992", "9007199254740993", "9007199254740993e-22", "1234567890123456789",
        "12345678901234567890", "0.1234567890123456789", "123456789012345678.9e-5", "0e999", "-0.0",
    ])
    func numbersMatchTheStandardLibrary(_ text: String) throws {
        #expect(try parse(text) == .number(Double(text)!))
    }

    @Test func numbersDecodeCorrectlyRounded() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let mantissa = UInt64.random(in: 0..<1_000_000_000_000_000, using: &generator)
            let exponent = Int.random(in: -30...30, using: &generator)
            let point = Int.random(in: 0...17, using: &generator)
            var digits = String(mantissa)
            if point > 0 && point < digits.count {
                digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -point))
            }
            if digits.hasPrefix(".") { digits = "0" + digits }
            let text = "\(digits)e\(exponent)"
            #expect(try parse(text) == .number(Double(text)!), "\(text)")
        }
    }

    @Test func numbersTooLargeForADoubleAreRejected() {
        #expect(throws: JSONError(.numberOutOfRange, at: 1)) { try parse("[1e400]") }
        #expect(throws: JSONError.self) { try parse("-1e309") }
        // The validator accepts them: the limit is the tree's, not the grammar's.
        #expect(TestBytes.validate("1e400") == nil)
    }

    @Test func rejectsWhatTheValidatorRejects() {
        for text in ["[1,]", "01", "\"\\ud800\"", "{\"a\":1}x", "", "[\"\u{1}\"]"] {
            #expect(throws: JSONError.self, "\(text)") { try parse(text) }
        }
    }

    @Test func depthLimitAndNoRecursion() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONError(.tooDeep, at: 128)) { try parse(deep) }
        // With the limit raised, 100,000 levels parse without touching the thread's stack.
        var value = try parse(deep, maxDepth: 100_000)
        var levels = 0
        while case .array(let elements) = value, let first = elements.first {
            levels += 1
            value = first
        }
        #expect(levels == 99_999)
        #expect(value == .array([]))
    }
}
