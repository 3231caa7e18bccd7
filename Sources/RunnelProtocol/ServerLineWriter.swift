import RunnelBytes
import RunnelJSON

/// Builds one server line (docs/protocol.md, "Two kinds of server lines"): a compact JSON
/// object, member by member, without the line end, which is the transport's to add (TCP ends
/// it with `\n`, a WebSocket sends it as one message).
///
/// The one encoder of every line the server writes apart from the `next` events' hot path,
/// whose pieces (`SessionSubscription.nextPrefix`, the published bytes, `}`) it never
/// encodes per value. Start with `reply(_:)` (a reply's whole line from its value, a
/// `SessionReply`; defined beside that type), `event(_:sid:)` or `closing(_:)`, add members,
/// then take `finish()`; `reply(ok:ref:)` is the start of a reply, for `reply(_:)` and for
/// answers no session gives (an NDJSON body's count). Keys are `StaticString`s written as they are, so they must
/// be plain ASCII needing no escapes (all of the protocol's are); values are escaped or
/// encoded. A value type used by one thread at a time.
package struct ServerLineWriter {
    private var writer: JSONWriter
    /// No member written yet after an opening `{` (`object()`): the next key takes no comma.
    private var isEmptyObject = false

    private init(_ start: StaticString) {
        writer = JSONWriter(reservingCapacity: 96)
        writer.append(start)
    }

    /// `{`: an object of members only, not a line of the protocol (the HTTP front door's
    /// `/stats` body).
    package static func object() -> ServerLineWriter {
        var object = ServerLineWriter("{")
        object.isEmptyObject = true
        return object
    }

    /// `{"ok":true` or `{"ok":false`, then `"ref":R` when the request had a ref: its exact
    /// bytes, echoed unchanged.
    package static func reply(ok: Bool, ref: RawJSON?) -> ServerLineWriter {
        var line = ServerLineWriter(ok ? "{\"ok\":true" : "{\"ok\":false")
        if let ref { line.member("ref", raw: ref) }
        return line
    }

    /// `{"ev":"<event>","sid":S`, with the sid already encoded as a JSON string.
    package static func event(_ event: StaticString, sid: ByteBuffer) -> ServerLineWriter {
        var line = ServerLineWriter("{\"ev\":\"")
        line.writer.append(event)
        line.writer.append("\",\"sid\":")
        line.writer.append(raw: sid)
        return line
    }

    /// `{"ev":"closing","code":C,"message":M}`: the last line of a connection the server ends.
    package static func closing(_ reason: ProtocolError) -> ServerLineWriter {
        var line = ServerLineWriter(closingStart)
        line.closingMembers(reason)
        return line
    }

    /// `{"code":C,"message":M}`: a `closing` line's members as an object of their own (an SSE
    /// stream's `closing` event).
    package static func closingObject(_ reason: ProtocolError) -> ServerLineWriter {
        var object = object()
        object.closingMembers(reason)
        return object
    }

    private mutating func closingMembers(_ reason: ProtocolError) {
        member("code", string: reason.code.rawValue)
        if !reason.message.isEmpty { member("message", string: reason.message) }
    }

    private static let closingStart: StaticString = "{\"ev\":\"closing\""

    private mutating func key(_ key: StaticString) {
        if isEmptyObject {
            isEmptyObject = false
            writer.append("\"")
        } else {
            writer.append(",\"")
        }
        writer.append(key)
        writer.append("\":")
    }

    package mutating func member(_ key: StaticString, string: String) {
        self.key(key)
        writer.writeString(string)
    }

    package mutating func member<Integer: FixedWidthInteger>(_ key: StaticString, integer: Integer) {
        self.key(key)
        writer.writeInteger(integer)
    }

    /// `"key":{"a":1,"b":2}`: an object of counts, in the order given.
    package mutating func member(_ key: StaticString, counts: KeyValuePairs<StaticString, UInt64>) {
        self.key(key)
        for (index, (name, value)) in counts.enumerated() {
            writer.append(index == 0 ? "{\"" : ",\"")
            writer.append(name)
            writer.append("\":")
            writer.writeInteger(value)
        }
        writer.append("}")
    }

    package mutating func member(_ key: StaticString, bool: Bool) {
        self.key(key)
        writer.append(bool ? "true" : "false")
    }

    /// A member whose value is written as its exact bytes.
    package mutating func member(_ key: StaticString, raw: RawJSON) {
        self.key(key)
        writer.write(raw)
    }

    /// A member whose value `body` writes (an array of objects, for `list`).
    package mutating func member(_ key: StaticString, json body: (inout JSONWriter) -> Void) {
        self.key(key)
        body(&writer)
    }

    /// `"code":C,"message":M` and `"stage":N` where one raised it.
    package mutating func members(of error: ProtocolError) {
        member("code", string: error.code.rawValue)
        member("message", string: error.message)
        if let stage = error.stage { member("stage", integer: stage) }
    }

    /// Closes the object: the line, without its line end.
    package mutating func finish() -> [UInt8] {
        writer.append(UInt8(ascii: "}"))
        return writer.bytes
    }
}
