import RunnelUV

/// How a session's lines become Server-Sent Events (docs/protocol.md, "The HTTP front door"):
/// the stream's `completed`, `error` and `dropped` events, and
/// the position in a `next` event's tail. The session writes these lines with
/// `ServerLineWriter` for the subscription `sid`, so their shapes are fixed and each is read
/// by its bytes, without parsing. Pure functions: safe from any thread.
enum SSEFraming {
    /// The sid of a stream's subscription, as a JSON string's contents.
    static let sid = "sse"
    /// The end of a `next` line's tail before the position: `,"pos":"`; `"}` follows it.
    private static let positionStart = Array(",\"pos\":\"".utf8)
    /// What comes after an event's name: `","sid":"sse"`.
    private static let sidMember = Array("\",\"sid\":\"\(sid)\"".utf8)
    private static let eventStart = Array("{\"ev\":\"".utf8)

    /// The SSE event for one of the subscription's event lines, `{"ev":"NAME","sid":"sse"...}`,
    /// or the connection's `closing` line, `{"ev":"closing",...}`: `event: NAME` and `data:`
    /// the line's other members as an object (`{}` when none), then the empty line; and
    /// whether it ends the stream (`completed`, `error`, `closing`). Nil for any other line.
    static func event(fromLine line: UnsafeRawBufferPointer) -> (bytes: [UInt8], isTerminal: Bool)? {
        guard line.starts(with: eventStart) else { return nil }
        let afterStart = line.dropFirst(eventStart.count)
        guard let nameEnd = afterStart.firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        let name = afterStart[..<nameEnd]
        let afterName = afterStart[nameEnd...]
        let isClosing = name.elementsEqual("closing".utf8)
        // A `closing` line has no sid: its members follow the name's closing quote.
        let memberStart = isClosing ? 1 : sidMember.count
        guard isClosing || afterName.starts(with: sidMember) else { return nil }
        let members = afterName.dropFirst(memberStart)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(line.count + 16)
        bytes.append(contentsOf: "event: ".utf8)
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: "\ndata: {".utf8)
        // `}` alone, or `,` and the members then `}`.
        bytes.append(contentsOf: members.dropFirst(members.first == UInt8(ascii: ",") ? 1 : 0))
        bytes.append(contentsOf: "\n\n".utf8)
        let isTerminal = isClosing || name.elementsEqual("completed".utf8) || name.elementsEqual("error".utf8)
        return (bytes, isTerminal)
    }

    /// The position `EPOCH:SEQ` in a `next` line's tail `,"pos":"EPOCH:SEQ"}`; nil for the
    /// tail `}` of a value without one.
    @inline(__always)
    static func position(inTail tail: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard tail.count > positionStart.count + 2 else { return nil }
        return UnsafeRawBufferPointer(rebasing: tail[positionStart.count..<(tail.count - 2)])
    }

    /// Whether `value` holds a line break: JSON allows a raw `\r` as whitespace between
    /// tokens, and a line protocol client can publish one; in SSE it would end the `data:`
    /// line.
    @inline(__always)
    static func hasLineBreak(_ value: UnsafeRawBufferPointer) -> Bool {
        value.contains(where: OneLineJSON.isLineBreak)
    }

    /// `value` with its line breaks, whitespace between tokens, turned into spaces.
    static func withoutLineBreaks(_ value: UnsafeRawBufferPointer) -> [UInt8] {
        value.map(OneLineJSON.unbroken)
    }
}
