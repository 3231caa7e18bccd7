import RunnelBytes
import RunnelJSON
import RunnelProtocol
import RunnelServer
import RunnelUV

/// One JSON value from an HTTP body, made fit to travel on the line protocol. Pure function:
/// safe from any thread.
enum PublishedValue {
    /// `bytes` as a value: surrounding whitespace dropped, validated with the nesting limit,
    /// and copied once, with any line break inside it (only ever whitespace between tokens,
    /// since a JSON string cannot hold one raw) turned into a space, so that the value never
    /// splits a `next` line of the TCP protocol. `bad_json` when it is not one JSON value.
    static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) throws(ProtocolError) -> RawJSON {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else { throw ProtocolError(.badJSON, "the body holds no JSON value") }
        let value = UnsafeRawBufferPointer(rebasing: bytes[first...last])
        do {
            try JSONValidator(maxDepth: maxDepth).validate(value)
        } catch {
            throw ProtocolError(.badJSON, "invalid JSON: \(error)")
        }
        guard value.contains(where: OneLineJSON.isLineBreak) else {
            return RawJSON(validatedBuffer: ByteBuffer(copying: value))
        }
        return RawJSON(
            validatedBuffer: ByteBuffer(count: value.count) { target in
                for (index, byte) in value.enumerated() { target[index] = OneLineJSON.unbroken(byte) }
            })
    }
}
