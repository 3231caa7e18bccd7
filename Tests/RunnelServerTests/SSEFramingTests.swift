import Testing

@testable import RunnelServer

/// Server-Sent Events from a session's lines: the lines come from a real session (over a
/// `MemoryTransport`) subscribed as an SSE stream subscribes, so the framing is checked
/// against the shapes the session writes, not against copies of them.
@Suite struct SSEFramingTests {
    private func event(_ line: String) -> (text: String, isTerminal: Bool)? {
        var line = line
        return line.withUTF8 { bytes in
            SSEFraming.event(fromLine: UnsafeRawBufferPointer(bytes)).map {
                (String(decoding: $0.bytes, as: UTF8.self), $0.isTerminal)
            }
        }
    }

    private func position(inTail tail: String) -> String? {
        var tail = tail
        return tail.withUTF8 { bytes in
            SSEFraming.position(inTail: UnsafeRawBufferPointer(bytes)).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    @Test func terminalAndDroppedEventsBecomeNamedEventsWithTheirMembersAsData() {
        let harness = SessionHarness()
        let client = harness.connect()
        let sub = #"{"op":"sub","sid":"\#(SSEFraming.sid)","subject":"SUBJECT"}"#
        let reply = client.send(sub.replacingOccurrences(of: "SUBJECT", with: "a"))
        #expect(reply == [#"{"ok":true,"sid":"sse"}"#])
        let completed = client.send(#"{"op":"complete","subject":"a"}"#).filter { $0.hasPrefix(#"{"ev""#) }
        #expect(completed.count == 1 && event(completed[0])! == ("event: completed\ndata: {}\n\n", true))

        client.send(sub.replacingOccurrences(of: "SUBJECT", with: "b"))
        let failed = client.send(#"{"op":"error","subject":"b","message":"boom"}"#).filter { $0.hasPrefix(#"{"ev""#) }
        #expect(
            failed.count == 1
                && event(failed[0])!
                    == ("event: error\ndata: {\"code\":\"subject_error\",\"message\":\"boom\"}\n\n", true)
        )

        #expect(
            event(#"{"ev":"dropped","sid":"sse","count":12}"#)! == ("event: dropped\ndata: {\"count\":12}\n\n", false))
        // `closing` (no sid) is a terminal event: the close follows it.
        #expect(
            event(#"{"ev":"closing","code":"unauthorized","message":"m"}"#)!
                == ("event: closing\ndata: {\"code\":\"unauthorized\",\"message\":\"m\"}\n\n", true))
        #expect(
            event(#"{"ev":"closing","code":"slow_consumer"}"#)! == (
                "event: closing\ndata: {\"code\":\"slow_consumer\"}\n\n", true
            ))
    }

    @Test func aSubAsAValueIsAnsweredAsItsLineWouldBeWithTheReplyAsAValue() {
        let harness = SessionHarness()
        let client = harness.connect()
        func subscribe(_ subject: String, stages: [JSONValue] = [], from: String? = nil, maxDepth: Int = 128) {
            let request = SubscribeRequest(
                subject: subject, sid: SSEFraming.sid, stages: stages,
                stagesByteCount: SubscribeRequest.encodedLength(of: stages), from: from, positions: true)
            harness.run { client.transport.receive(subscription: request, maxDepth: maxDepth) }
        }
        subscribe("a", stages: [.object(JSONObject([("op", .string("nope"))]))])
        subscribe("a.*", from: "e:1")
        subscribe("a", stages: [.object(JSONObject([("op", .array([.array([])]))]))], maxDepth: 3)
        subscribe("a")
        let lines = client.lines()
        #expect(lines.count == 4)
        #expect(lines.last == #"{"ok":true,"sid":"sse"}"#)
        let tooDeep = #"{"ok":false,"code":"bad_json","message":"invalid JSON: nesting too deep at byte "#
        #expect(lines[2].hasPrefix(tooDeep))
        let codes = client.transport.replies.map { reply -> ErrorCode? in
            if case .failed(let error) = reply { return error.code }
            return nil
        }
        #expect(codes == [.badOperator, .badRequest, .badJSON, nil])
    }

    @Test func thePositionIsReadFromANextTail() {
        #expect(position(inTail: #","pos":"Ab_-9:42"}"#) == "Ab_-9:42")
        #expect(position(inTail: "}") == nil)
    }

    @Test func lineBreaksInAValueBecomeSpaces() {
        var value = "[1,\r\n2]"
        value.withUTF8 { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            #expect(SSEFraming.hasLineBreak(raw))
            #expect(String(decoding: SSEFraming.withoutLineBreaks(raw), as: UTF8.self) == "[1,  2]")
        }
        var plain = #"{"a":"b"}"#
        plain.withUTF8 { #expect(!SSEFraming.hasLineBreak(UnsafeRawBufferPointer($0))) }
    }
}
