import RunnelJSON
import RunnelProtocol
import Testing

@testable import RunnelHTTP
@testable import RunnelServer

/// Server-Sent Events from a session's values: the values come from a real session (over a
/// `MemoryTransport`) subscribed as an SSE stream subscribes, so the framing is checked
/// against what the session hands a transport, not against copies of it.
@Suite struct SSEFramingTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func terminalAndDroppedEventsReachTheTransportAsValuesAndBecomeNamedEvents() {
        let harness = SessionHarness()
        let client = harness.connect()
        let sub = #"{"op":"sub","sid":"\#(SSEFraming.sid)","subject":"SUBJECT"}"#
        let reply = client.send(sub.replacingOccurrences(of: "SUBJECT", with: "a"))
        #expect(reply == [#"{"ok":true,"sid":"sse"}"#])
        client.send(#"{"op":"complete","subject":"a"}"#)
        client.send(sub.replacingOccurrences(of: "SUBJECT", with: "b"))
        client.send(#"{"op":"error","subject":"b","message":"boom"}"#)
        let events = client.transport.events
        #expect(events.count == 2 && events.allSatisfy { $0.sid == "sse" })
        let framed = events.map { text(SSEFraming.event($0.event)) }
        #expect(
            framed == [
                "event: completed\ndata: {}\n\n",
                "event: error\ndata: {\"code\":\"subject_error\",\"message\":\"boom\"}\n\n",
            ])
        #expect(events.allSatisfy { $0.event.isTerminal })

        #expect(text(SSEFraming.event(.dropped(count: 12))) == "event: dropped\ndata: {\"count\":12}\n\n")
        #expect(!SessionEvent.dropped(count: 12).isTerminal)
        // A cluster's values missed without knowing how many: no count.
        #expect(text(SSEFraming.event(.dropped(count: nil))) == "event: dropped\ndata: {}\n\n")
        #expect(
            text(SSEFraming.closing(ProtocolError(.unauthorized, "m")))
                == "event: closing\ndata: {\"code\":\"unauthorized\",\"message\":\"m\"}\n\n")
        #expect(
            text(SSEFraming.closing(ProtocolError(.slowConsumer, "")))
                == "event: closing\ndata: {\"code\":\"slow_consumer\"}\n\n")
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
            if case .failed(let error) = reply.outcome { return error.code }
            return nil
        }
        #expect(codes == [.badOperator, .badRequest, .badJSON, nil])
    }

    @Test func aPositionReachesTheTransportAsAValueAndBecomesTheEventsID() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"create","subject":"p","kind":"replay","capacity":4}"#)
        client.send(#"{"op":"pub","subject":"p","value":1}"#)
        let lines = client.send(#"{"op":"sub","sid":"sse","subject":"p","positions":true}"#)
        let positions = client.transport.positions
        #expect(positions.count == 1)
        // The value beside the line is the position the line's tail encodes.
        #expect(lines.count == 2 && lines[1].hasSuffix(#","pos":"\#(positions[0])"}"#))
        var fields = ""
        let label = SubjectLabel("p", epoch: "Ab_-9")
        Array("42".utf8).withUnsafeBytes { digits in
            let position = EventPosition(prefix: label.positionPrefix!.bytes, seq: 42, digits: digits)
            SSEFraming.withFields(before: position) { fields = String(decoding: $0, as: UTF8.self) }
        }
        #expect(fields == "id: Ab_-9:42\ndata: ")
        SSEFraming.withFields(before: nil) { fields = String(decoding: $0, as: UTF8.self) }
        #expect(fields == "data: ")
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
