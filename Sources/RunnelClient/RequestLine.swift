import RunnelJSON

/// Builds one request line (`{"op":...,...}\n`) with the server's `JSONWriter`, so strings are
/// escaped and raw values are copied byte for byte, without Foundation.
///
/// Thread rules: a value type, used by one thread at a time. Lifetime rule: none (a value).
package struct RequestLine {
    private var writer = JSONWriter(reservingCapacity: 96)

    package init(op: StaticString) {
        writer.append("{\"op\":\"")
        writer.append(op)
        writer.append(UInt8(ascii: "\""))
    }

    /// A request whose op is chosen at run time (`RunnelClient.request`).
    package init(op: String) {
        writer.append("{\"op\":")
        writer.writeString(op)
    }

    package mutating func string(_ key: StaticString, _ value: String) {
        member(key)
        writer.writeString(value)
    }

    package mutating func bool(_ key: StaticString, _ value: Bool) {
        member(key)
        writer.append(value ? "true" : "false")
    }

    package mutating func integer(_ key: StaticString, _ value: Int) {
        member(key)
        writer.writeInteger(value)
    }

    package mutating func raw(_ key: StaticString, _ value: RawJSON) {
        member(key)
        writer.write(value)
    }

    package mutating func json(_ key: StaticString, _ value: JSONValue) {
        member(key)
        writer.write(value)
    }

    /// A member whose name is chosen at run time (`RunnelClient.request`'s fields).
    package mutating func json(named key: String, _ value: JSONValue) {
        writer.append(UInt8(ascii: ","))
        writer.writeString(key)
        writer.append(UInt8(ascii: ":"))
        writer.write(value)
    }

    private mutating func member(_ key: StaticString) {
        writer.append(UInt8(ascii: ","))
        writer.append(UInt8(ascii: "\""))
        writer.append(key)
        writer.append("\":")
    }

    /// The finished line, `}` and `\n` appended.
    package func finished() -> [UInt8] {
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "}"))
        bytes.append(0x0A)
        return bytes
    }
}
