import RunnelBytes
import Testing

@testable import RunnelJSON

@Suite struct RawJSONTests {
    /// The bytes a client sent are the bytes kept: no normalisation of any kind.
    @Test(arguments: ["1.0", "1e2", "-0", "1E+02", #""\u00e9""#, #""\/""#, #"{"b":1, "a" : [ 2 ]}"#, "[1.50]", "true"])
    func keepsExactBytes(_ text: String) throws {
        let raw = try RawJSON(validating: text)
        #expect(raw.description == text)
        #expect(raw.buffer.array == Array(text.utf8))
    }

    @Test func decodesLazilyToTheSameTree() throws {
        let raw = try RawJSON(validating: #"{"t":21.5,"s":"caf\u00e9","l":[1e2]}"#)
        let value = try raw.decoded()
        #expect(
            value
                == .object(
                    JSONObject([("t", .number(21.5)), ("s", .string("caf\u{E9}")), ("l", .array([.number(100)]))])))
    }

    @Test func rejectsInvalidBytes() {
        #expect(throws: JSONError.self) { try RawJSON(validating: "[1,]") }
        #expect(throws: JSONError(.tooDeep, at: 2)) { try RawJSON(validating: "[[[]]]", maxDepth: 2) }
        #expect(throws: JSONError(.numberOutOfRange, at: 0)) { try RawJSON(validating: "1e999").decoded() }
    }

    @Test func encodingComputedValues() throws {
        let raw = RawJSON(
            encoding: .object(JSONObject([("h", .string("a")), ("pct", .number(93)), ("r", .number(7.0 / 2))])))
        #expect(raw.description == #"{"h":"a","pct":93,"r":3.5}"#)
        #expect(
            try raw.decoded() == .object(JSONObject([("h", .string("a")), ("pct", .number(93)), ("r", .number(3.5))])))
        #expect(RawJSON.null.description == "null")
        #expect(try RawJSON.null.decoded() == .null)
    }

    @Test func comparesBytesNotStructure() throws {
        let one = try RawJSON(validating: "1")
        #expect(one.hasSameBytes(as: try RawJSON(validating: "1")))
        #expect(!one.hasSameBytes(as: try RawJSON(validating: "1.0")))
        #expect(try one.decoded() == (try RawJSON(validating: "1.0")).decoded())
    }

    @Test func copiesShareOneBuffer() throws {
        let raw = try RawJSON(validating: "[1,2,3]")
        let copy = raw
        #expect(copy.buffer.isSameBuffer(as: raw.buffer))
    }
}
