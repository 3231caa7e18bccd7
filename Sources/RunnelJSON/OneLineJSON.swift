#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A JSON value kept on one line: JSON allows a raw line break only as whitespace between
/// tokens (a string cannot hold one), so a space in its place changes nothing, and the value
/// can no longer split a `next` line of the line protocol or an SSE `data:` line. Pure
/// functions: safe from any thread.
package enum OneLineJSON {
    @inline(__always)
    package static func isLineBreak(_ byte: UInt8) -> Bool { byte == 0x0A || byte == 0x0D }

    /// `byte`, or a space for a line break.
    @inline(__always)
    package static func unbroken(_ byte: UInt8) -> UInt8 { isLineBreak(byte) ? 0x20 : byte }

    /// `text` (a request) with each line break between tokens turned into a space: the same
    /// JSON, on one line, so nothing taken from it splits a line of the TCP protocol. A line
    /// break inside a string is left, for the parser to refuse as JSON does. Nil when `text`
    /// has no `\n` (found with `memchr`: the common case costs one fast scan).
    package static func joinedLines(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let base = text.baseAddress, memchr(base, 0x0A, text.count) != nil else { return nil }
        var joined = Array(text)
        var isInString = false
        var isEscaped = false
        for index in joined.indices {
            let byte = joined[index]
            if isInString {
                if isEscaped {
                    isEscaped = false
                } else if byte == UInt8(ascii: "\\") {
                    isEscaped = true
                } else if byte == UInt8(ascii: "\"") {
                    isInString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                isInString = true
            } else if isLineBreak(byte) {
                joined[index] = 0x20
            }
        }
        return joined
    }
}
