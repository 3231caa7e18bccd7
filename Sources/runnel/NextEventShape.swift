/// The fast path for the line `runneld` sends most: `{"ev":"next","sid":S,"value":V}` or, for
/// a pattern subscription, `{"ev":"next","sid":S,"subject":N,"value":V}`, written by the
/// server in exactly that member order and without whitespace.
///
/// `match` finds the sid, subject and value by position, without scanning the value: a
/// subscriber printing hundreds of thousands of values a second must keep up with the server,
/// or it is disconnected as a slow consumer. Any line of another shape (escapes in the sid or
/// subject, other member order) returns nil, and the caller parses it fully with `ServerLine`.
/// Stateless.
enum NextEventShape {
    static let head = Array(#"{"ev":"next","sid":""#.utf8)
    static let valueKey = Array(#","value":"#.utf8)
    static let subjectKey = Array(#","subject":""#.utf8)

    struct Match {
        /// The sid's characters (without quotes).
        var sid: Range<Int>
        /// The subject's characters (without quotes), for pattern subscriptions.
        var subject: Range<Int>?
        /// The value's exact bytes.
        var value: Range<Int>
    }

    static func match(_ line: UnsafeRawBufferPointer) -> Match? {
        guard line.count > head.count + valueKey.count + 2, starts(line, at: 0, with: head) else { return nil }
        guard let sidEnd = plainStringEnd(line, from: head.count) else { return nil }
        let sid = head.count..<sidEnd
        var position = sidEnd + 1
        var subject: Range<Int>?
        if starts(line, at: position, with: subjectKey) {
            let start = position + subjectKey.count
            guard let end = plainStringEnd(line, from: start) else { return nil }
            subject = start..<end
            position = end + 1
        }
        guard starts(line, at: position, with: valueKey), line[line.count - 1] == UInt8(ascii: "}") else { return nil }
        let valueStart = position + valueKey.count
        guard valueStart < line.count - 1 else { return nil }
        return Match(sid: sid, subject: subject, value: valueStart..<(line.count - 1))
    }

    private static func starts(_ line: UnsafeRawBufferPointer, at offset: Int, with prefix: [UInt8]) -> Bool {
        guard offset + prefix.count <= line.count else { return false }
        for index in 0..<prefix.count where line[offset + index] != prefix[index] { return false }
        return true
    }

    /// The index of the closing quote of a string without escapes that starts at `from`.
    private static func plainStringEnd(_ line: UnsafeRawBufferPointer, from: Int) -> Int? {
        var index = from
        while index < line.count {
            switch line[index] {
            case UInt8(ascii: "\""): return index
            case UInt8(ascii: "\\"): return nil
            default: index += 1
            }
        }
        return nil
    }
}
