import Testing

@testable import RunnelJSON

@Suite struct JSONWriterTests {
    func number(_ value: Double) -> String {
        var writer = JSONWriter()
        writer.writeNumber(value)
        return TestBytes.text(writer.bytes)
    }

    @Test(arguments: [
        (2.0, "2"), (-2.0, "-2"), (0.0, "0"), (-0.0, "0"), (7.0 / 2.0, "3.5"), (4.0 / 2.0, "2"), (0.1, "0.1"),
        (0.1 + 0.2, "0.30000000000000004"), (1e15, "1000000000000000"), (9_007_199_254_740_992, "9007199254740992"),
        (-9_007_199_254_740_992, "-9007199254740992"), (1e-7, "1e-07"), (123.456, "123.456"), (1e300, "1e+300"),
        (Double.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"), (100.0, "100"),
    ])
    func formatsNumbers(_ value: Double, _ expected: String) {
        #expect(number(value) == expected)
    }

    /// Beyond ±2^53 a number keeps its shortest round-trip form and stays valid JSON.
    @Test func largeIntegralNumbersStayValidAndExact() throws {
        for value in [9_007_199_254_740_994.0, 1e16, -1e17, 18_446_744_073_709_551_616.0, 1e22] {
            let text = number(value)
            #expect(TestBytes.validate(text) == nil, "\(text)")
            #expect(try JSONParser().parse(text) == .number(value))
        }
    }

    @Test func nonFiniteNumbersNeverProduceInvalidJSON() {
        #expect(number(.infinity) == "null")
        #expect(number(-.infinity) == "null")
        #expect(number(.nan) == "null")
    }

    @Test func integers() {
        var writer = JSONWriter()
        for value in [0, 7, -7, Int.max, Int.min] {
            writer.writeInteger(value)
            writer.append(UInt8(ascii: " "))
        }
        #expect(TestBytes.text(writer.bytes) == "0 7 -7 9223372036854775807 -9223372036854775808 ")
    }

    @Test(arguments: [
        ("plain", #""plain""#), ("a\"b\\c/d", #""a\"b\\c/d""#), ("\n\r\t\u{8}\u{C}", #""\n\r\t\b\f""#),
        ("\u{0}\u{1}\u{1F}\u{7F}", #""\u0000\u0001\u001f"# + "\u{7F}\""),
        ("caf\u{E9} \u{1F600}", "\"caf\u{E9} \u{1F600}\""),
        ("", #""""#), ("\u{2028}", "\"\u{2028}\""),
    ])
    func escapesStrings(_ string: String, _ expected: String) throws {
        var writer = JSONWriter()
        writer.writeString(string)
        #expect(TestBytes.text(writer.bytes) == expected)
        #expect(try JSONParser().parse(writer.bytes) == .string(string))
    }

    @Test func encodesCompactly() throws {
        let value = try JSONParser().parse(#" { "a" : [ 1 , 2.50 , { } , [ ] , null , true ] , "b" : "x" } "#)
        #expect(value.jsonText == #"{"a":[1,2.5,{},[],null,true],"b":"x"}"#)
    }

    @Test func roundTrips() throws {
        let texts = [
            #"{"k":[1,-2.5,"\u00e9\n",null,true,false,{"n":{"m":[[],{}]}}],"e":""}"#, "[]", "{}", "0", "\"\"",
            #"[1e300,5e-324,0.1,-0,123456789]"#, #"{"dup":1,"dup":2}"#,
        ]
        for text in texts {
            let value = try JSONParser().parse(text)
            let encoded = value.jsonBytes
            #expect(TestBytes.validate(encoded) == nil)
            #expect(try JSONParser().parse(encoded) == value, "\(text)")
            // Encoding is stable: a second round gives the same bytes.
            #expect(try JSONParser().parse(encoded).jsonBytes == encoded)
        }
    }

    /// The encoder does not recurse, so a very deep computed value encodes without a crash.
    @Test func encodesDeepValuesIteratively() throws {
        var value = JSONValue.number(1)
        for _ in 0..<50_000 { value = .array([value]) }
        let bytes = value.jsonBytes
        #expect(bytes.count == 100_001)
        #expect(bytes.prefix(3) == [UInt8(ascii: "["), UInt8(ascii: "["), UInt8(ascii: "[")])
        #expect(TestBytes.validate(bytes, maxDepth: 50_000) == nil)
        // Taking the nest apart one level at a time keeps its destruction iterative too.
        while case .array(let elements) = value, let first = elements.first { value = first }
    }

    /// Values that cross the recursion limit, with siblings before and after each level,
    /// encode the same way on both sides of it.
    @Test func encodesAcrossTheRecursionLimit() throws {
        var value = JSONValue.string("core")
        for level in 0..<(JSONWriter.recursionLimit * 2 + 3) {
            value =
                level % 2 == 0
                ? .array([.number(Double(level)), value, .null])
                : .object(JSONObject([("a", .bool(true)), ("n\(level)", value), ("z", .array([]))]))
        }
        let bytes = value.jsonBytes
        #expect(TestBytes.validate(bytes, maxDepth: 1000) == nil)
        #expect(try JSONParser(maxDepth: 1000).parse(bytes) == value)
        #expect(TestBytes.text(bytes).hasPrefix(#"[130,{"a":true,"n129":[128,{"a":true,"n127":[126,"#))
        #expect(TestBytes.text(bytes).hasSuffix(#"},null],"z":[]},null]"#))
        #expect(TestBytes.text(bytes).contains(#"{"a":true,"n1":[0,"core",null],"z":[]}"#))
    }
}
