import RunnelUV
import Testing

@testable import RunnelServer

@Suite struct EventEncoderTests {
    func text(_ bytes: [UInt8]) -> String { TestBytes.text(bytes) }
    func text(_ buffer: ByteBuffer) -> String { TestBytes.text(buffer.array) }

    /// A server line is one valid JSON object and one `\n`.
    func expectValidLine(_ bytes: [UInt8]) {
        #expect(bytes.last == UInt8(ascii: "\n"))
        #expect(TestBytes.validate(Array(bytes.dropLast())) == nil, "\(text(bytes))")
        #expect(!bytes.dropLast().contains(UInt8(ascii: "\n")))
    }

    @Test func replies() {
        let ref = Array(#""r-1""#.utf8)
        ref.withUnsafeBytes { ref in
            #expect(text(EventEncoder.ok(ref: ref)) == "{\"ok\":true,\"ref\":\"r-1\"}\n")
            #expect(
                text(EventEncoder.published(ref: ref, receivers: 3))
                    == "{\"ok\":true,\"ref\":\"r-1\",\"receivers\":3}\n")
        }
        #expect(text(EventEncoder.ok(ref: nil)) == "{\"ok\":true}\n")
        #expect(text(EventEncoder.subscribed(ref: nil, sid: "s\"1")) == "{\"ok\":true,\"sid\":\"s\\\"1\"}\n")
        let line = EventEncoder.errorReply(ref: nil, code: "bad_expr", message: "unexpected \"}\"\n", stage: 2)
        #expect(
            text(line) == "{\"ok\":false,\"code\":\"bad_expr\",\"message\":\"unexpected \\\"}\\\"\\n\",\"stage\":2}\n")
        expectValidLine(line)
        #expect(
            text(EventEncoder.errorReply(ref: nil, code: "bad_json", message: "x"))
                == "{\"ok\":false,\"code\":\"bad_json\",\"message\":\"x\"}\n")
    }

    /// `ref` is echoed byte for byte, whatever scalar it was.
    @Test func refIsEchoedUnchanged() throws {
        for ref in ["1.0", "1e2", #""\u00e9""#, "null", "false", "-0"] {
            let request = Array((#"{"op":"ping","ref":"# + ref + "}").utf8)
            let reply = try request.withUnsafeBytes { line in
                EventEncoder.ok(ref: try RequestScanner().scan(line).scalarRef())
            }
            #expect(text(reply) == "{\"ok\":true,\"ref\":" + ref + "}\n")
        }
    }

    @Test func longerRepliesFromTheLineWriter() throws {
        var line = ServerLineWriter.reply(ok: true, ref: nil)
        line.member(
            "subjects", value: .array([.object(JSONObject([("subject", .string("a")), ("subscribers", .number(2))]))]))
        line.member("uptime_s", number: 1.5)
        line.member("terminated", bool: false)
        line.member("value", raw: try RawJSON(validating: "1.0"))
        let bytes = line.finish()
        #expect(
            text(bytes)
                == "{\"ok\":true,\"subjects\":[{\"subject\":\"a\",\"subscribers\":2}],\"uptime_s\":1.5,\"terminated\":false,\"value\":1.0}\n"
        )
        expectValidLine(bytes)
    }

    @Test func streamEvents() {
        #expect(text(EventEncoder.completedEvent(sid: "s1")) == "{\"ev\":\"completed\",\"sid\":\"s1\"}\n")
        #expect(
            text(EventEncoder.droppedEvent(sid: "s1", count: 12))
                == "{\"ev\":\"dropped\",\"sid\":\"s1\",\"count\":12}\n")
        #expect(
            text(EventEncoder.errorEvent(sid: "s1", code: "eval", message: "timeout", stage: 0))
                == "{\"ev\":\"error\",\"sid\":\"s1\",\"code\":\"eval\",\"message\":\"timeout\",\"stage\":0}\n")
        #expect(
            text(EventEncoder.errorEvent(sid: "s1", code: "subject_error", message: "boom"))
                == "{\"ev\":\"error\",\"sid\":\"s1\",\"code\":\"subject_error\",\"message\":\"boom\"}\n")
        #expect(
            text(EventEncoder.closingEvent(code: "slow_consumer"))
                == "{\"ev\":\"closing\",\"code\":\"slow_consumer\"}\n")
    }

    @Test func nextLineIsSharedPieces() throws {
        let prefix = NextEventPrefix(sid: "abc")
        #expect(text(prefix.head) == "{\"ev\":\"next\",\"sid\":\"abc\",\"value\":")
        let value = try RawJSON(validating: #"{"t":1.0,"s":"\u00e9"}"#)
        let line = EventEncoder.next(prefix, value: value)
        #expect(line.count == 3)
        #expect(line[0].isSameBuffer(as: prefix.head))
        #expect(line[1].isSameBuffer(as: value.buffer))
        #expect(line[2].isSameBuffer(as: NextEventLine.lineEnd))
        #expect(text(line.joined) == "{\"ev\":\"next\",\"sid\":\"abc\",\"value\":{\"t\":1.0,\"s\":\"\\u00e9\"}}\n")
        #expect(line.byteCount == line.joined.count)
        expectValidLine(line.joined)
        // Another subscriber's line for the same value shares the value buffer.
        let other = EventEncoder.next(NextEventPrefix(sid: "z"), value: value)
        #expect(other[1].isSameBuffer(as: line[1]))
    }

    @Test func patternNextLineCarriesTheSubject() throws {
        let prefix = NextEventPrefix(sid: "p\u{E9}", isPattern: true)
        let subject = EncodedSubjectName("sensors.a.temp")
        let line = EventEncoder.next(prefix, subject: subject, value: try RawJSON(validating: "21.50"))
        #expect(line.count == 5)
        #expect(line[1].isSameBuffer(as: subject.quoted))
        #expect(
            text(line.joined)
                == "{\"ev\":\"next\",\"sid\":\"p\u{E9}\",\"subject\":\"sensors.a.temp\",\"value\":21.50}\n")
        expectValidLine(line.joined)
        #expect(line.byteCount == line.joined.count)
    }

    @Test func computedValuesEncodeCompactly() {
        let line = EventEncoder.next(NextEventPrefix(sid: "s"), value: RawJSON(encoding: .number(4.0 / 2)))
        #expect(text(line.joined) == "{\"ev\":\"next\",\"sid\":\"s\",\"value\":2}\n")
    }
}
