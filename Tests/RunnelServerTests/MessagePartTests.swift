import Runnel
import RunnelBytes
import RunnelJSON
import RunnelProtocol
import RunnelUV
import Testing

@testable import RunnelServer

/// A `map` projection of a published value (`.p`) that is most of it and no larger than a
/// delivery copies is carried as a part of the same payload (`Message.part`), with no payload
/// of its own; a small part is a copy, and a large one a payload of its own. Whatever carries
/// it, later stages and deliveries see the same value.
@Suite struct MessagePartTests {
    /// The messages `ops` sends for `json` published to its source, with the published one.
    static func mapped(_ ops: String, _ json: String) throws -> (published: Message, sent: [Message]) {
        let harness = StageHarness()
        let chain = try harness.compile(ops)
        let sent = Locked<[Message]>([])
        let published = Message(label: harness.sourceLabel, raw: try RawJSON(validating: json), seq: 7)
        harness.scheduler.performAsCurrent {
            _ = chain.subscribe(next: { message in sent.withLock { $0.append(message) } })
            harness.source.sendNext(published)
        }
        return (published, sent.withLock { $0 })
    }

    /// Whether `inner` lies within `outer`.
    static func contains(_ outer: UnsafeRawBufferPointer, _ inner: UnsafeRawBufferPointer) -> Bool {
        inner.baseAddress! >= outer.baseAddress! && inner.baseAddress! + inner.count <= outer.baseAddress! + outer.count
    }

    @Test func mostOfAValueIsAPartOfItsPayload() throws {
        let text = "~T123~" + String(repeating: "x", count: 40)
        let (published, sent) = try Self.mapped(#"[{"op":"map","expr":".p"}]"#, #"{"load":0.95,"p":"\#(text)"}"#)
        let message = try #require(sent.first)
        #expect(!message.part.isWhole && message.source === published.value, "no payload of its own")
        #expect(message.seq == 7 && message.label === published.label)
        let whole = try #require(published.value.publishedBytes)
        let bytes = try #require(message.publishedBytes)
        #expect(Self.contains(whole, bytes) && String(decoding: bytes, as: UTF8.self) == "\"\(text)\"")
        #expect(message.value.raw.description == "\"\(text)\"")
        #expect(try message.value.decoded() == .string(text))
    }

    @Test func aSmallPartIsACopy() throws {
        let json = #"{"a":1,"padding":"\#(String(repeating: "x", count: 32))"}"#
        let (published, sent) = try Self.mapped(#"[{"op":"map","expr":".a"}]"#, json)
        let message = try #require(sent.first)
        #expect(message.part.isWhole)
        let bytes = try #require(message.publishedBytes)
        #expect(!Self.contains(try #require(published.value.publishedBytes), bytes), "it does not keep the value")
        #expect(message.value.raw.description == "1")
    }

    @Test func aPartLargerThanADeliveryCopiesHasAPayloadOfItsOwn() throws {
        let text = String(repeating: "y", count: ByteBuffer.copyThreshold + 1)
        let (published, sent) = try Self.mapped(#"[{"op":"map","expr":".p"}]"#, #"{"p":"\#(text)"}"#)
        let message = try #require(sent.first)
        #expect(message.part.isWhole && message.source !== published.value)
        // Still the published bytes, shared: a slice of them, not a copy.
        let bytes = try #require(message.publishedBytes)
        #expect(Self.contains(try #require(published.value.publishedBytes), bytes))
        #expect(message.value.raw.description == "\"\(text)\"")
    }

    @Test func aMessageIsFourWordsAndKeepsItsSeq() throws {
        #expect(MemoryLayout<Message>.size == 4 * MemoryLayout<Int>.size, "passed in registers")
        let label = SubjectLabel("s")
        let json = #"{"p":"\#(String(repeating: "x", count: 20))"}"#
        for seq: UInt64? in [nil, 0, 1, UInt64.max] {
            let message = Message(label: label, raw: try RawJSON(validating: json), seq: seq)
            #expect(message.seq == seq && message.part.isWhole)
            let part = Message(madeFrom: message, projecting: 5..<(json.utf8.count - 1))
            #expect(part.seq == seq && !part.part.isWhole && part.part.range == 5..<(json.utf8.count - 1))
            #expect(part.value.raw.description == #""\#(String(repeating: "x", count: 20))""#)
        }
    }

    @Test func aMissingMemberIsNull() throws {
        let (_, sent) = try Self.mapped(#"[{"op":"map","expr":".q"}]"#, #"{"p":"xxxxxxxxxx"}"#)
        #expect(sent.map(\.value.raw.description) == ["null"])
    }

    @Test func laterStagesReadAPartAsTheValue() throws {
        let pad = String(repeating: "z", count: 24)
        let values = [
            #"{"x":0,"p":{"n":2,"q":{"r":"\#(pad)a"}}}"#, #"{"x":0,"p":{"n":1,"q":{"r":"\#(pad)b"}}}"#,
            #"{"x":0,"p":{"n":3, "q" : {"r":"\#(pad)a"} }}"#, #"{"x":0,"p":{"n":4,"q":{"r":"\#(pad)c"}}}"#,
        ]
        let chain = StageHarness()
        try chain.run(
            #"[{"op":"map","expr":".p"},{"op":"filter","expr":".n > 1"},{"op":"map","expr":".q"},"#
                + #"{"op":"map","expr":".r"},{"op":"distinctUntilChanged"}]"#)
        try chain.pub(values)
        #expect(chain.values() == [#""\#(pad)a""#, #""\#(pad)c""#])

        let whole = StageHarness()
        try whole.run(#"[{"op":"map","expr":".p"},{"op":"map","expr":"keys(.)"},{"op":"take","count":1}]"#)
        try whole.pub(values)
        #expect(whole.values() == [#"["n","q"]"#, "completed"])

        let collected = StageHarness()
        try collected.run(#"[{"op":"map","expr":".p"},{"op":"map","expr":".q"},{"op":"collect"}]"#)
        try collected.pub(Array(values.prefix(2)))
        collected.complete()
        #expect(collected.values() == [#"[{"r":"\#(pad)a"},{"r":"\#(pad)b"}]"#, "completed"])
    }
}
