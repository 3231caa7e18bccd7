import RunnelJSON
import RunnelServer

/// Builds one request line (`{"op":...,...}\n`) with the server's `JSONWriter`, so strings are
/// escaped and raw values are copied byte for byte, without Foundation. A value type.
struct RequestLine {
    private var writer = JSONWriter(reservingCapacity: 96)

    init(op: StaticString) {
        writer.append("{\"op\":\"")
        writer.append(op)
        writer.append(UInt8(ascii: "\""))
    }

    mutating func string(_ key: StaticString, _ value: String) {
        member(key)
        writer.writeString(value)
    }

    mutating func bool(_ key: StaticString, _ value: Bool) {
        member(key)
        writer.append(value ? "true" : "false")
    }

    mutating func integer(_ key: StaticString, _ value: Int) {
        member(key)
        writer.writeInteger(value)
    }

    /// A member whose value is bytes already known to be one valid JSON value.
    mutating func raw(_ key: StaticString, _ value: UnsafeRawBufferPointer) {
        member(key)
        writer.append(raw: value)
    }

    mutating func raw(_ key: StaticString, _ value: RawJSON) {
        member(key)
        writer.write(value)
    }

    mutating func json(_ key: StaticString, _ value: JSONValue) {
        member(key)
        writer.write(value)
    }

    private mutating func member(_ key: StaticString) {
        writer.append(UInt8(ascii: ","))
        writer.append(UInt8(ascii: "\""))
        writer.append(key)
        writer.append("\":")
    }

    /// The finished line, `}` and `\n` appended.
    func finished() -> [UInt8] {
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "}"))
        bytes.append(0x0A)
        return bytes
    }
}
