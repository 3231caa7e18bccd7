/// A JSON value kept on one line: JSON allows a raw line break only as whitespace between
/// tokens (a string cannot hold one), so a space in its place changes nothing, and the value
/// can no longer split a `next` line of the line protocol or an SSE `data:` line. Pure
/// functions: safe from any thread.
enum OneLineJSON {
    @inline(__always)
    static func isLineBreak(_ byte: UInt8) -> Bool { byte == 0x0A || byte == 0x0D }

    /// `byte`, or a space for a line break.
    @inline(__always)
    static func unbroken(_ byte: UInt8) -> UInt8 { isLineBreak(byte) ? 0x20 : byte }
}
