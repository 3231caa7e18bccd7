/// A frame's opcode (RFC 6455, 5.2).
package enum WebSocketOpcode: UInt8 {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    package var isControl: Bool { rawValue & 0x8 != 0 }
}

/// The head of a frame the server sends (RFC 6455, 5.2): FIN set, never masked (only clients
/// mask), the payload length in its shortest form; at most 10 bytes, built on the stack.
/// A delivery's payload is three pieces (the `next` line's head, the value, its tail) that go
/// into the connection's buffer with the frame's head in one copy.
package enum WebSocketFrameHead {
    /// Calls `body` with the head of a final, unmasked frame of `opcode` carrying `length`
    /// payload bytes; RSV1 set when the payload is `compressed` (permessage-deflate).
    @inline(__always)
    package static func withHead<Result>(
        _ opcode: WebSocketOpcode, length: Int, compressed: Bool = false, _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result {
        var storage: (UInt64, UInt16) = (0, 0)
        return withUnsafeMutableBytes(of: &storage) { head in
            head[0] = 0x80 | (compressed ? 0x40 : 0) | opcode.rawValue
            let size: Int
            if length < 126 {
                head[1] = UInt8(length)
                size = 2
            } else if length <= 0xFFFF {
                head[1] = 126
                head[2] = UInt8(truncatingIfNeeded: length >> 8)
                head[3] = UInt8(truncatingIfNeeded: length)
                size = 4
            } else {
                head[1] = 127
                for index in 0..<8 { head[2 + index] = UInt8(truncatingIfNeeded: length >> (56 - 8 * index)) }
                size = 10
            }
            return body(UnsafeRawBufferPointer(rebasing: head[..<size]))
        }
    }
}
