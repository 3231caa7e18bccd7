import RunnelUV

/// Builds one server line (a reply or an event) as bytes, with JSON string escaping.
///
/// Replies are built whole here; hot-path `next` events are not (they are written as shared
/// pieces, see `EventSink`).
struct LineBuilder {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func append(_ literal: StaticString) {
        literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func append(raw: UnsafeRawBufferPointer) { bytes.append(contentsOf: raw) }

    mutating func append(_ buffer: ByteBuffer) { bytes.append(contentsOf: buffer.bytes) }

    mutating func append(_ raw: RawJSON) { append(raw.buffer) }

    mutating func append(_ value: Int) { bytes.append(contentsOf: String(value).utf8) }

    mutating func append(_ value: UInt64) { bytes.append(contentsOf: String(value).utf8) }

    /// Appends `string` as a JSON string literal, quotes included.
    mutating func appendString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `,"key":` — keys are the server's own, never in need of escaping.
    mutating func appendKey(_ key: StaticString) {
        append(",\"")
        append(key)
        append("\":")
    }

    func buffer() -> ByteBuffer { bytes.withUnsafeBytes { ByteBuffer(copying: $0) } }
}
