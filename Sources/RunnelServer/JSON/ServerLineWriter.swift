import RunnelUV

/// Builds one server line: a compact JSON object followed by `\n`, member by member.
///
/// Start with `reply(ok:ref:)` or `event(_:sid:)`, add members, then take `finish()` (or
/// `finishBuffer()`). Keys are `StaticString`s written as they are, so they must be plain
/// ASCII needing no escapes (all of the protocol's are); values are escaped or encoded.
/// A value type used by one thread at a time.
public struct ServerLineWriter {
    private var writer: JSONWriter

    /// An empty object, for lines of another shape (`{"ev":"closing",...}`).
    public init(reservingCapacity capacity: Int = 96) {
        writer = JSONWriter(reservingCapacity: capacity)
        writer.append(UInt8(ascii: "{"))
    }

    /// `{"ok":true` or `{"ok":false`, then `"ref":R` when the request had a ref. `ref` is the
    /// request's exact `ref` bytes (from `ScannedRequest.scalarRef()`), echoed unchanged.
    public static func reply(ok: Bool, ref: UnsafeRawBufferPointer?) -> ServerLineWriter {
        var line = ServerLineWriter()
        line.writer.append(ok ? "\"ok\":true" : "\"ok\":false")
        if let ref {
            line.writer.append(",\"ref\":")
            line.writer.append(raw: ref)
        }
        return line
    }

    /// `{"ev":"<event>","sid":"<sid>"`.
    public static func event(_ event: StaticString, sid: String) -> ServerLineWriter {
        var line = ServerLineWriter()
        line.writer.append("\"ev\":\"")
        line.writer.append(event)
        line.writer.append("\",\"sid\":")
        line.writer.writeString(sid)
        return line
    }

    private mutating func key(_ key: StaticString) {
        if writer.bytes.count > 1 { writer.append(UInt8(ascii: ",")) }
        writer.append(UInt8(ascii: "\""))
        writer.append(key)
        writer.append("\":")
    }

    public mutating func member(_ key: StaticString, string: String) {
        self.key(key)
        writer.writeString(string)
    }

    public mutating func member(_ key: StaticString, integer: Int) {
        self.key(key)
        writer.writeInteger(integer)
    }

    public mutating func member(_ key: StaticString, number: Double) {
        self.key(key)
        writer.writeNumber(number)
    }

    public mutating func member(_ key: StaticString, bool: Bool) {
        self.key(key)
        writer.append(bool ? "true" : "false")
    }

    public mutating func member(_ key: StaticString, value: JSONValue) {
        self.key(key)
        writer.write(value)
    }

    /// A member whose value is written as its exact bytes.
    public mutating func member(_ key: StaticString, raw: RawJSON) {
        self.key(key)
        writer.write(raw)
    }

    /// Closes the object and ends the line.
    public mutating func finish() -> [UInt8] {
        writer.append("}\n")
        return writer.bytes
    }

    /// Closes the object and ends the line, as a shared buffer for the transport.
    public mutating func finishBuffer() -> ByteBuffer {
        writer.append("}\n")
        return writer.makeBuffer()
    }
}
