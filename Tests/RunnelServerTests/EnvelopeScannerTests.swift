import RunnelProtocol
import Testing

@testable import RunnelServer

@Suite struct EnvelopeScannerTests {
    /// Scans `line` and hands the result to `body` while the line's bytes are alive.
    func withRequest(_ line: String, _ body: (ScannedEnvelope) throws -> Void) throws {
        let bytes = Array(line.utf8)
        try bytes.withUnsafeBytes { buffer in try body(try EnvelopeScanner().scan(buffer)) }
    }

    func scanError(_ line: String) -> ProtocolError? {
        Array(line.utf8).withUnsafeBytes { buffer -> ProtocolError? in
            do throws(ProtocolError) {
                _ = try EnvelopeScanner().scan(buffer)
                return nil
            } catch {
                return error
            }
        }
    }

    @Test func pub() throws {
        try withRequest(#"{"op":"pub","subject":"cpu","value":{"host":"a","load":0.93}}"#) { request throws in
            #expect(try request.operation() == .known(.pub))
            #expect(try request.requiredString(.subject) == "cpu")
            #expect(request.rawJSON(.value)?.description == #"{"host":"a","load":0.93}"#)
            #expect(request.value?.kind == .object)
            #expect(request.ref == nil)
            #expect(try request.scalarRef() == nil)
        }
    }

    @Test func pubWithoutValueAndWithRef() throws {
        try withRequest(#"{"ref":17,"op":"pub","subject":"a.b"}"#) { request throws in
            #expect(request.value == nil)
            #expect(try request.scalarRef().map { Array($0) } == Array("17".utf8))
        }
    }

    @Test func exactValueBytesArePreserved() throws {
        for value in ["1.0", "1e2", #""\u00e9""#, "[ 1 , 2 ]", "-0.0", "null", #"{"a" :"b"}"#] {
            try withRequest(#"{"op":"pub","subject":"s","value":"# + value + "}") { request throws in
                #expect(request.rawJSON(.value)?.description == value)
                #expect(request.text(request.value!) == value)
            }
        }
    }

    @Test func sub() throws {
        let line =
            #"{"op":"sub","subject":"cpu","sid":"hot","ops":[{"op":"filter","expr":".load > 0.9"},{"op":"throttle","seconds":1}],"ref":"r1"}"#
        try withRequest(line) { request throws in
            #expect(try request.operation() == .known(.sub))
            #expect(try request.string(.sid) == "hot")
            #expect(request.ops?.kind == .array)
            #expect(
                request.text(request.ops!) == #"[{"op":"filter","expr":".load > 0.9"},{"op":"throttle","seconds":1}]"#)
            #expect(try request.scalarRef().map { Array($0) } == Array(#""r1""#.utf8))
            // The nested "op"s are not the request's.
            #expect(request.string(request.op!) == "sub")
            #expect(try request.decoded(request.ops!) != .null)
        }
        try withRequest(#"{"op":"sub","subject":"sensors.*.temp"}"#) { request throws in
            #expect(try request.string(.sid) == nil)
            #expect(request.ops == nil)
        }
    }

    @Test func everyOtherRequestShape() throws {
        try withRequest(#"{"op":"unsub","sid":"s1","ref":null}"#) { request throws in
            #expect(try request.operation() == .known(.unsub))
            #expect(try request.requiredString(.sid) == "s1")
            #expect(try request.scalarRef().map { Array($0) } == Array("null".utf8))
        }
        try withRequest(#"{"op":"create","subject":"h","kind":"replay","capacity":10}"#) { request throws in
            #expect(try request.operation() == .known(.create))
            #expect(try request.string(.kind) == "replay")
            #expect(try request.integer(.capacity) == 10)
        }
        try withRequest(#"{"op":"create","subject":"b","kind":"behavior","value":[1.50]}"#) { request throws in
            #expect(request.rawJSON(.value)?.description == "[1.50]")
        }
        try withRequest(#"{"op":"complete","subject":"x"}"#) { request throws in
            #expect(try request.operation() == .known(.complete))
        }
        try withRequest(#"{"op":"error","subject":"x","message":"boom \"quoted\""}"#) { request throws in
            #expect(try request.operation() == .known(.error))
            #expect(try request.requiredString(.message) == "boom \"quoted\"")
        }
        try withRequest(#"{"op":"delete","subject":"x"}"#) { request throws in
            #expect(try request.operation() == .known(.delete))
        }
        try withRequest(#"{"op":"list","prefix":"sensors."}"#) { request throws in
            #expect(try request.operation() == .known(.list))
            #expect(try request.string(named: "prefix") == "sensors.")
        }
        try withRequest(#"{"op":"list"}"#) { request throws in #expect(try request.string(named: "prefix") == nil) }
        try withRequest(#"{"op":"pub","subject":"m","key":"k","delete":true}"#) { request throws in
            #expect(try request.string(.key) == "k" && request.bool(.delete) == true)
        }
        try withRequest(#"{"op":"stats","ref":true}"#) { request throws in
            #expect(try request.operation() == .known(.stats))
            #expect(try request.scalarRef().map { Array($0) } == Array("true".utf8))
        }
        try withRequest(#"{"op":"ping","ref":-1.5e3}"#) { request throws in
            #expect(try request.operation() == .known(.ping))
            #expect(try request.scalarRef().map { Array($0) } == Array("-1.5e3".utf8))
        }
        try withRequest(#"{"op":"auth","token":"s3cr\u0065t"}"#) { request throws in
            #expect(try request.operation() == .known(.auth))
            #expect(try request.string(named: "token") == "s3cret")
        }
    }

    @Test func unknownOpIsReportedByName() throws {
        try withRequest(#"{"op":"frobnicate"}"#) { request throws in
            #expect(try request.operation() == .unknown("frobnicate"))
        }
        try withRequest(#"{"op":"PUB"}"#) { request throws in #expect(try request.operation() == .unknown("PUB")) }
        try withRequest(#"{"op":""}"#) { request throws in #expect(try request.operation() == .unknown("")) }
    }

    @Test func escapedKeysAndStringsAreUnescaped() throws {
        try withRequest(#"{"\u006fp":"p\u0075b","subj\u0065ct":"caf\u00e9.\ud83d\ude00.x\"y"}"#) { request throws in
            #expect(try request.operation() == .known(.pub))
            #expect(try request.requiredString(.subject) == "caf\u{E9}.\u{1F600}.x\"y")
        }
    }

    @Test func duplicateKeysLastWins() throws {
        try withRequest(#"{"op":"sub","subject":"a","subject":"b","value":1,"value":[2]}"#) { request throws in
            #expect(try request.requiredString(.subject) == "b")
            #expect(request.rawJSON(.value)?.description == "[2]")
        }
    }

    @Test func otherFieldsByName() throws {
        try withRequest(
            #"{"op":"pub","subject":"s","x-trace":{"id":7},"n":[1],"x-trace":"last","value":{"x-trace":0}}"#
        ) { request throws in
            let trace = try #require(request.field(named: "x-trace"))
            #expect(request.string(trace) == "last")
            #expect(request.field(named: "n").map { request.text($0) } == "[1]")
            #expect(request.field(named: "missing") == nil)
            #expect(request.field(named: "subject") == request.subject)
        }
        try withRequest(#"{"op":"pub","\u00e9":true}"#) { request throws in
            let field = try #require(request.field(named: "\u{E9}"))
            #expect(request.bool(field) == true)
        }
    }

    @Test func notJSONOrNotAnObjectIsBadJSON() {
        for line in [
            "", "   ", "hello", "{\"op\":\"pub\"", "[1,2]", "\"op\"", "42", "null", "{\"op\":\"pub\",}",
            "{\"op\":\"pub\",\"value\":[1,]}", "{\"op\":\"pub\"} x", "{\"op\":\"pub\",\"value\":\"\\ud800\"}",
        ] {
            #expect(scanError(line)?.code == .badJSON, "\(line)")
        }
        let deep = "{\"op\":\"pub\",\"value\":" + String(repeating: "[", count: 100_000) + "}"
        #expect(scanError(deep)?.code == .badJSON)
    }

    @Test func trailingCarriageReturnIsWhitespace() throws {
        try withRequest("{\"op\":\"ping\"}\r") { request throws in #expect(try request.operation() == .known(.ping)) }
    }

    @Test func missingOrWrongTypedFieldsAreBadRequest() throws {
        try withRequest(#"{"subject":"x"}"#) { request throws in
            #expect(throws: ProtocolError(.badRequest, "missing field 'op'")) { try request.operation() }
        }
        try withRequest(#"{"op":7}"#) { request throws in
            #expect(throws: ProtocolError(.badRequest, "field 'op' must be a string")) { try request.operation() }
            #expect(throws: ProtocolError(.badRequest, "missing field 'subject'")) {
                try request.requiredString(.subject)
            }
        }
        try withRequest(#"{"op":"sub","subject":["a"],"sid":5,"capacity":2.5,"ref":{"a":1}}"#) { request throws in
            #expect(throws: ProtocolError(.badRequest, "field 'subject' must be a string")) {
                try request.requiredString(.subject)
            }
            #expect(throws: ProtocolError(.badRequest, "field 'sid' must be a string")) { try request.string(.sid) }
            #expect(throws: ProtocolError(.badRequest, "field 'capacity' must be an integer")) {
                try request.integer(.capacity)
            }
            #expect(throws: ProtocolError(.badRequest, "field 'ref' must be a scalar")) { try request.scalarRef() }
        }
        try withRequest(#"{"op":"create","capacity":"3"}"#) { request throws in
            #expect(throws: ProtocolError(.badRequest, "field 'capacity' must be a number")) {
                try request.integer(.capacity)
            }
        }
        try withRequest(#"{"op":"create","capacity":3.0}"#) { request throws in
            #expect(try request.integer(.capacity) == 3)
        }
        try withRequest(#"{"op":"create","capacity":1e30}"#) { request throws in
            #expect(throws: ProtocolError.self) { try request.integer(.capacity) }
        }
    }
}

@Suite struct EnvelopeKeyMatchingTests {
    /// `matcher` on `name` alone (packed a byte at a time), and on `name` inside a line that
    /// goes on past it as a request does (packed with one eight-byte load and a mask): both
    /// must give the same answer.
    func match<T: Equatable>(
        _ name: String, _ matcher: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> T?
    ) -> T? {
        let alone = Array(name.utf8).withUnsafeBytes { matcher($0, $0) }
        let inLine = Array((name + #"":"xyzxyzxyz"}"#).utf8).withUnsafeBytes { line in
            matcher(UnsafeRawBufferPointer(rebasing: line[0..<name.utf8.count]), line)
        }
        #expect(alone == inLine, "\(name)")
        return alone
    }

    @Test func everyKeyAndOpMatchesItsOwnNameOnly() {
        for key in EnvelopeKey.allCases {
            #expect(match(key.name, EnvelopeKey.matching) == key)
            #expect(match(key.name + "\u{0}", EnvelopeKey.matching) == nil)
            #expect(match(String(key.name.dropFirst()), EnvelopeKey.matching) == nil)
            let shorter = String(key.name.dropLast())  // "ops" less a byte is "op"
            #expect(match(shorter, EnvelopeKey.matching) == EnvelopeKey.allCases.first { $0.name == shorter })
            #expect(match(key.name.uppercased(), EnvelopeKey.matching) == nil)
        }
        for op in RequestOp.allCases {
            #expect(match(op.rawValue, RequestOp.matching) == op)
            #expect(match(op.rawValue + "\u{0}", RequestOp.matching) == nil)
            #expect(match("\u{0}" + op.rawValue, RequestOp.matching) == nil)
            #expect(match(String(op.rawValue.dropLast()), RequestOp.matching) == nil)
        }
        #expect(match("", RequestOp.matching) == nil)
        #expect(match("", EnvelopeKey.matching) == nil)
        #expect(match("completed", RequestOp.matching) == nil)
    }
}
