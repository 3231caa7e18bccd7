import Testing

@testable import RunnelJSON

/// JSON made to fit on one line: line breaks between tokens become spaces, nothing else moves.
@Suite struct OneLineJSONTests {
    private func joined(_ text: String) -> String? {
        Array(text.utf8).withUnsafeBytes { OneLineJSON.joinedLines($0) }.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func aTextWithoutNewlinesIsLeftAlone() {
        #expect(joined(#"{"op":"ping"}"#) == nil)
        #expect(joined("{\"a\":\r1}") == nil)
    }

    @Test func lineBreaksBetweenTokensBecomeSpaces() {
        #expect(joined("{\"op\":\"pub\",\r\n\"value\":\n[1,\n2]}") == "{\"op\":\"pub\",  \"value\": [1, 2]}")
    }

    @Test func stringsKeepWhatTheyHoldForTheParserToJudge() {
        // An escaped quote does not end the string; a raw line break inside one stays (invalid JSON).
        #expect(joined("{\"a\":\"x\\\"\n\"}\n") == "{\"a\":\"x\\\"\n\"} ")
        #expect(joined("[\"\\\\\",\n1]") == "[\"\\\\\", 1]")
    }
}
