#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One JSON value inside bytes `JSONScanner` has already accepted, read in place: its kind, an
/// object's members and an array's items are found by skipping over the bytes, without
/// building anything, and only a value asked for is decoded (`decoded()`).
///
/// This is what lets an expression path such as `.load` or `.a.b[2]` read a published value
/// without decoding the rest of it (`ExpressionInput.bytes`). The bytes are trusted to be
/// valid, so skipping only has to find where each value ends: strings end at their first
/// unescaped quote, containers where their brackets balance, scalars at the first byte that
/// cannot continue them.
///
/// A view, not an owner: valid only while the buffer it points into is alive and unchanged
/// (the caller keeps the `Payload` or `RawJSON` alive around its use). Any thread.
struct JSONValueBytes {
    /// The whole validated buffer this value sits in (offsets in errors are into it).
    let buffer: UnsafeRawBufferPointer
    /// The value's own bytes within `buffer`, without surrounding whitespace.
    let range: Range<Int>

    /// The value that `bytes`, one whole validated JSON text, holds (whitespace around it allowed).
    init(validated bytes: UnsafeRawBufferPointer) {
        var start = 0
        var end = bytes.count
        while start < end, JSONValueBytes.isWhitespace(bytes[start]) { start += 1 }
        while end > start, JSONValueBytes.isWhitespace(bytes[end - 1]) { end -= 1 }
        self.init(buffer: bytes, range: start..<end)
    }

    private init(buffer: UnsafeRawBufferPointer, range: Range<Int>) {
        assert(!range.isEmpty && range.upperBound <= buffer.count, "a JSON value has at least one byte")
        self.buffer = buffer
        self.range = range
    }

    /// The value's own bytes.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[range]) }

    /// What kind of value it is, from its first byte.
    var kind: JSONKind {
        switch buffer[range.lowerBound] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .boolean
        case UInt8(ascii: "n"): return .null
        default: return .number
        }
    }

    /// For an object: the value of the last member named `key` (nil when there is none) and
    /// how many members it has, repeated keys included. Keys with escapes compare decoded.
    func lastMember(named key: String) -> (value: JSONValueBytes?, memberCount: Int) {
        assert(kind == .object)
        if let found = key.utf8.withContiguousStorageIfAvailable({ lastMember(utf8: UnsafeRawBufferPointer($0)) }) {
            return found
        }
        return Array(key.utf8).withUnsafeBytes { lastMember(utf8: $0) }
    }

    /// `lastMember(named:)` for the key's UTF-8. One pass over the members: a key is first
    /// compared in place (`wanted` then a quote); only a key with escapes is decoded to compare.
    private func lastMember(utf8 wanted: UnsafeRawBufferPointer) -> (value: JSONValueBytes?, memberCount: Int) {
        // A key written without escapes holds neither byte; one that needs them can only match
        // a key with escapes.
        let plain = !wanted.contains(UInt8(ascii: "\\")) && !wanted.contains(UInt8(ascii: "\""))
        let base = buffer.baseAddress!
        var found: Range<Int>?
        var count = 0
        var position = skipWhitespace(from: range.lowerBound + 1)
        if buffer[position] == UInt8(ascii: "}") { return (nil, 0) }
        while true {
            let content = position + 1
            let keyEnd: Int
            let matched: Bool
            if plain, content + wanted.count < buffer.count, buffer[content + wanted.count] == UInt8(ascii: "\""),
                wanted.isEmpty || memcmp(base + content, wanted.baseAddress!, wanted.count) == 0
            {
                // No backslash before that quote: it closes the key.
                keyEnd = content + wanted.count + 1
                matched = true
            } else {
                keyEnd = stringEnd(from: position)
                let keyContent = content..<(keyEnd - 1)
                matched =
                    hasEscapes(keyContent)
                    && JSONStringDecoding.string(
                        content: UnsafeRawBufferPointer(rebasing: buffer[keyContent]), hasEscapes: true
                    ).utf8.elementsEqual(wanted)
            }
            count += 1
            // Past the colon and the whitespace around it.
            position = skipWhitespace(from: skipWhitespace(from: keyEnd) + 1)
            let valueEnd = end(from: position)
            if matched { found = position..<valueEnd }
            position = skipWhitespace(from: valueEnd)
            guard buffer[position] == UInt8(ascii: ",") else { break }
            position = skipWhitespace(from: position + 1)
        }
        return (found.map { JSONValueBytes(buffer: buffer, range: $0) }, count)
    }

    /// For an array: how many items it has.
    var elementCount: Int {
        assert(kind == .array)
        var count = 0
        forEachElement { _ in count += 1 }
        return count
    }

    /// For an array: the item at `offset` (0 ≤ `offset` < `elementCount`).
    func element(at offset: Int) -> JSONValueBytes {
        assert(kind == .array)
        var index = 0
        var found: Range<Int>?
        forEachElement { valueRange in
            if index == offset { found = valueRange }
            index += 1
        }
        guard let found else { preconditionFailure("item \(offset) of an array of \(index)") }
        return JSONValueBytes(buffer: buffer, range: found)
    }

    /// The value as a tree. Fails only for a number too large for a Double (the offset is
    /// into `buffer`, as a full decode of it would report).
    func decoded() throws(JSONError) -> JSONValue {
        let start = range.lowerBound
        switch kind {
        case .null: return .null
        case .boolean: return .bool(buffer[start] == UInt8(ascii: "t"))
        case .number:
            guard let number = JSONNumberDecoding.double(bytes) else { throw JSONError(.numberOutOfRange, at: start) }
            return .number(number)
        case .string:
            let content = (start + 1)..<(range.upperBound - 1)
            return .string(
                JSONStringDecoding.string(
                    content: UnsafeRawBufferPointer(rebasing: buffer[content]), hasEscapes: hasEscapes(content)))
        case .array, .object:
            do {
                return try JSONParser(maxDepth: .max).parse(bytes)
            } catch {
                throw JSONError(error.reason, at: start + error.offset)
            }
        }
    }

    // MARK: Skipping

    /// Calls `body` with the range of each item of an array, in order.
    @inline(__always)
    private func forEachElement(_ body: (Range<Int>) -> Void) {
        var position = skipWhitespace(from: range.lowerBound + 1)
        if buffer[position] == UInt8(ascii: "]") { return }
        while true {
            let valueEnd = end(from: position)
            body(position..<valueEnd)
            position = skipWhitespace(from: valueEnd)
            guard buffer[position] == UInt8(ascii: ",") else { return }
            position = skipWhitespace(from: position + 1)
        }
    }

    /// Where the value starting at `start` ends (just past its last byte).
    private func end(from start: Int) -> Int {
        switch buffer[start] {
        case UInt8(ascii: "\""): return stringEnd(from: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var position = start
            while true {
                switch buffer[position] {
                case UInt8(ascii: "\""):
                    position = stringEnd(from: position)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return position + 1 }
                default: break
                }
                position += 1
            }
        case UInt8(ascii: "t"), UInt8(ascii: "n"): return start + 4
        case UInt8(ascii: "f"): return start + 5
        default:
            var position = start + 1
            while position < buffer.count, JSONValueBytes.continuesNumber(buffer[position]) { position += 1 }
            return position
        }
    }

    /// Where the string whose opening quote is at `start` ends (just past its closing quote):
    /// the first quote not escaped, found with `memchr` (vectorised by the C library; a
    /// quote is escaped when an odd number of backslashes precedes it).
    private func stringEnd(from start: Int) -> Int {
        let base = buffer.baseAddress!
        var position = start + 1
        while true {
            // The bytes are valid JSON: the string has a closing quote.
            let found = memchr(base + position, Int32(UInt8(ascii: "\"")), buffer.count - position)!
            let quote = UnsafeRawPointer(found) - base
            var backslashes = 0
            while buffer[quote - 1 - backslashes] == UInt8(ascii: "\\") { backslashes += 1 }
            if backslashes & 1 == 0 { return quote + 1 }
            position = quote + 1
        }
    }

    /// Whether `range` (a string's content) holds a backslash, i.e. an escape.
    private func hasEscapes(_ range: Range<Int>) -> Bool {
        !range.isEmpty && memchr(buffer.baseAddress! + range.lowerBound, Int32(UInt8(ascii: "\\")), range.count) != nil
    }

    private func skipWhitespace(from start: Int) -> Int {
        var position = start
        while position < buffer.count, JSONValueBytes.isWhitespace(buffer[position]) { position += 1 }
        return position
    }

    @inline(__always) private static func isWhitespace(_ c: UInt8) -> Bool {
        c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09
    }

    @inline(__always) private static func continuesNumber(_ c: UInt8) -> Bool {
        c &- UInt8(ascii: "0") < 10 || c == UInt8(ascii: ".") || c | 0x20 == UInt8(ascii: "e")
            || c == UInt8(ascii: "+") || c == UInt8(ascii: "-")
    }
}
