/// The fast path for the line `runneld` sends most: `{"ev":"next","sid":S,"value":V}` or, for
/// a pattern subscription, `{"ev":"next","sid":S,"subject":N,"value":V}`, written by the
/// server in exactly that member order and without whitespace, and `,"pos":"EPOCH:SEQ"` after
/// the value when the subscription asked for positions. A line that ends with a time
/// (`,"ts":MS}`, version 1.3) is left to `ServerLine`.
///
/// `match` finds the sid, subject and value by position, without scanning the value: a
/// subscriber printing hundreds of thousands of values a second must keep up with the server,
/// or it is disconnected as a slow consumer. Any line of another shape (escapes in the sid or
/// subject, other member order) returns nil, and the caller parses it fully with `ServerLine`.
///
/// Thread rules: stateless, any thread. Lifetime rule: none (a `Match` holds offsets into a line the
/// caller keeps).
package enum NextEventShape {
    static let head = Array(#"{"ev":"next","sid":""#.utf8)
    static let valueKey = Array(#","value":"#.utf8)
    static let subjectKey = Array(#","subject":""#.utf8)

    package struct Match {
        /// The sid's characters (without quotes).
        package var sid: Range<Int>
        /// The subject's characters (without quotes), for pattern subscriptions.
        package var subject: Range<Int>?
        /// The value's exact bytes.
        package var value: Range<Int>
        /// The position's characters (without quotes), when the line carries one.
        package var position: Range<Int>?
    }

    package static func match(_ line: UnsafeRawBufferPointer) -> Match? {
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
        guard starts(line, at: position, with: valueKey), line[line.count - 1] == UInt8(ascii: "}"),
            !hasTrailingTime(line)
        else { return nil }
        let valueStart = position + valueKey.count
        let positionText = trailingPosition(line)
        let valueEnd = positionText.map { $0.lowerBound - positionKey.count } ?? line.count - 1
        guard valueStart < valueEnd else { return nil }
        return Match(sid: sid, subject: subject, value: valueStart..<valueEnd, position: positionText)
    }

    static let positionKey = Array(#","pos":""#.utf8)
    static let timeKey = Array(#","ts":"#.utf8)

    /// Whether the line ends with `,"ts":DIGITS}`. No value can end that way either: the value
    /// would have to end with an object's member outside any object.
    private static func hasTrailingTime(_ line: UnsafeRawBufferPointer) -> Bool {
        var index = line.count - 2
        while index > 0, line[index] >= UInt8(ascii: "0"), line[index] <= UInt8(ascii: "9") { index -= 1 }
        guard index < line.count - 2, index + 1 >= timeKey.count else { return false }
        return starts(line, at: index + 1 - timeKey.count, with: timeKey)
    }

    /// Where `EPOCH:SEQ` is when the line ends with `,"pos":"EPOCH:SEQ"}`. No value can end
    /// that way: a string value cannot hold an unescaped quote, an array or object value ends
    /// the line with `]}` or `}}`, and the other values hold no quotes.
    private static func trailingPosition(_ line: UnsafeRawBufferPointer) -> Range<Int>? {
        let end = line.count - 2
        guard end > 0, line[end] == UInt8(ascii: "\"") else { return nil }
        var index = end - 1
        while index > 0 {
            let byte = line[index]
            let isPositionByte =
                (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
            if !isPositionByte { break }
            index -= 1
        }
        let start = index + 1
        guard start < end, index + 1 >= positionKey.count,
            starts(line, at: start - positionKey.count, with: positionKey)
        else { return nil }
        return start..<end
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
