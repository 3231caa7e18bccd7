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
package struct JSONValueBytes {
    /// The whole validated buffer this value sits in (offsets in errors are into it).
    package let buffer: UnsafeRawBufferPointer
    /// The value's own bytes within `buffer`, without surrounding whitespace.
    package let range: Range<Int>

    /// The value that `bytes`, one whole validated JSON text, holds (whitespace around it allowed).
    @inline(__always)
    package init(validated bytes: UnsafeRawBufferPointer) {
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
    package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[range]) }

    /// What kind of value it is, from its first byte.
    @inline(__always)
    package var kind: JSONKind {
        switch buffer[range.lowerBound] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .boolean
        case UInt8(ascii: "n"): return .null
        default: return .number
        }
    }

    /// For an object: the value of the last member named `name` (nil when there is none) and
    /// how many members it has, repeated keys included. Keys with escapes compare decoded.
    package func lastMember(named name: JSONMemberName) -> (value: JSONValueBytes?, memberCount: Int) {
        var ignorer = JSONMemberIgnorer()
        return lastMember(utf8: name.utf8, noting: &ignorer)
    }

    /// `lastMember(named:)` that also notes where the members sit in `index`.
    package func lastMember(named name: JSONMemberName, noting index: inout JSONMemberIndex) -> (
        value: JSONValueBytes?, memberCount: Int
    ) {
        lastMember(utf8: name.utf8, noting: &index)
    }

    /// `lastMember(named:)` through `index`, an index of this object's members
    /// (`isAvailable`): the keys are compared from the last, where they are, and nothing is
    /// scanned, not even the value found. A name that needs escapes cannot equal a key without
    /// them, so it matches none.
    @inline(__always)
    package func lastMember(named name: JSONMemberName, in index: JSONMemberIndex) -> (
        value: JSONValueBytes?, memberCount: Int
    ) {
        assert(kind == .object && index.isAvailable)
        let count = index.count
        guard name.isPlain else { return (nil, count) }
        let wanted = name.utf8
        let base = range.lowerBound
        var position = count
        while position > 0 {
            position &-= 1
            let key = base &+ index.key(position)
            // The key ends at its first quote: `wanted` and a quote, within the object.
            let quote = key &+ wanted.count
            guard quote < range.upperBound, byte(at: quote) == UInt8(ascii: "\""),
                self.key(at: key, wanted.count, equals: wanted)
            else { continue }
            let start = valueStart(afterKeyEndingAt: quote)
            return (JSONValueBytes(buffer: buffer, range: start..<valueEnd(ofMember: position, in: index)), count)
        }
        return (nil, count)
    }

    /// Where the value of the member whose key's closing quote is at `quote` starts: past the
    /// colon and the whitespace around it.
    @inline(__always)
    private func valueStart(afterKeyEndingAt quote: Int) -> Int {
        skipWhitespace(from: skipWhitespace(from: quote &+ 1) &+ 1)
    }

    /// Where the value of member `position` of `index` ends (just past its last byte), found
    /// without scanning the value: back from what follows it, the next member's comma or the
    /// object's closing brace, over whitespace.
    @inline(__always)
    private func valueEnd(ofMember position: Int, in index: JSONMemberIndex) -> Int {
        var end: Int
        if position &+ 1 < index.count {
            end = range.lowerBound &+ index.key(position &+ 1) &- 2  // before the next key's quote
            while JSONValueBytes.isWhitespace(byte(at: end)) { end &-= 1 }
            assert(byte(at: end) == UInt8(ascii: ","), "members are separated by a comma")
            end &-= 1
        } else {
            end = range.upperBound &- 2  // before the closing brace
        }
        while JSONValueBytes.isWhitespace(byte(at: end)) { end &-= 1 }
        return end &+ 1
    }

    /// `lastMember(named:)` for a name computed during an evaluation (`.[$subject]`).
    package func lastMember(named key: String) -> (value: JSONValueBytes?, memberCount: Int) {
        var key = key
        var ignorer = JSONMemberIgnorer()
        return key.withUTF8 { lastMember(utf8: UnsafeRawBufferPointer($0), noting: &ignorer) }
    }

    /// `lastMember(named:)` for the name's UTF-8, telling `recorder` of each member. One pass
    /// over the members: each key is scanned to its closing quote (a backslash skips the byte
    /// it escapes), then one without escapes is compared in place, byte for byte; only one
    /// with escapes is decoded to compare. (A name that needs escapes, holding a quote or a
    /// backslash, can only match a key with escapes: the in-place comparison cannot match it.)
    private func lastMember<Recorder: JSONMemberRecorder>(
        utf8 wanted: UnsafeRawBufferPointer, noting recorder: inout Recorder
    ) -> (value: JSONValueBytes?, memberCount: Int) {
        assert(kind == .object)
        recorder.begin()
        // The found value's bounds; `foundStart` -1 while none is found.
        var foundStart = -1
        var foundEnd = 0
        var count = 0
        var position = skipWhitespace(from: range.lowerBound &+ 1)
        if byte(at: position) == UInt8(ascii: "}") { return (nil, 0) }
        while true {
            let content = position &+ 1
            var quote = content
            var escaped = false
            while true {
                let c = byte(at: quote)
                if c == UInt8(ascii: "\"") { break }
                if c == UInt8(ascii: "\\") {
                    escaped = true
                    quote &+= 2
                } else {
                    quote &+= 1
                }
            }
            let matched =
                escaped
                ? decodedKey(content..<quote, equals: wanted) : key(at: content, quote &- content, equals: wanted)
            count &+= 1
            recorder.note(key: content &- range.lowerBound, escaped: escaped)
            position = valueStart(afterKeyEndingAt: quote)
            let valueEnd = end(from: position)
            if matched { (foundStart, foundEnd) = (position, valueEnd) }
            position = skipWhitespace(from: valueEnd)
            guard byte(at: position) == UInt8(ascii: ",") else { break }
            position = skipWhitespace(from: position &+ 1)
        }
        guard foundStart >= 0 else { return (nil, count) }
        return (JSONValueBytes(buffer: buffer, range: foundStart..<foundEnd), count)
    }

    /// Whether the key of `length` bytes written without escapes at `start` is `wanted`.
    @inline(__always)
    private func key(at start: Int, _ length: Int, equals wanted: UnsafeRawBufferPointer) -> Bool {
        guard length == wanted.count else { return false }
        var offset = 0
        while offset < length {
            guard byte(at: start &+ offset) == wanted[offset] else { return false }
            offset &+= 1
        }
        return true
    }

    /// Whether the key with escapes at `content`, decoded, is `wanted`.
    private func decodedKey(_ content: Range<Int>, equals wanted: UnsafeRawBufferPointer) -> Bool {
        JSONStringDecoding.string(content: UnsafeRawBufferPointer(rebasing: buffer[content]), hasEscapes: true).utf8
            .elementsEqual(wanted)
    }

    /// For an array: how many items it has.
    package var elementCount: Int {
        assert(kind == .array)
        var count = 0
        forEachElement { _ in count += 1 }
        return count
    }

    /// For an array: the item at `offset` (0 ≤ `offset` < `elementCount`).
    package func element(at offset: Int) -> JSONValueBytes {
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
    package func decoded() throws(JSONError) -> JSONValue {
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
        var position = skipWhitespace(from: range.lowerBound &+ 1)
        if byte(at: position) == UInt8(ascii: "]") { return }
        while true {
            let valueEnd = end(from: position)
            body(position..<valueEnd)
            position = skipWhitespace(from: valueEnd)
            guard byte(at: position) == UInt8(ascii: ",") else { return }
            position = skipWhitespace(from: position &+ 1)
        }
    }

    // Skipping is inside this value, a container whose closing bracket follows whatever is
    // skipped (the bytes are valid JSON): positions are in bounds without a check, and the
    // arithmetic cannot overflow.

    /// The byte at `position`, which is inside the container.
    @inline(__always)
    private func byte(at position: Int) -> UInt8 {
        assert(position >= range.lowerBound && position < range.upperBound, "read outside the container")
        return buffer.baseAddress.unsafelyUnwrapped.load(fromByteOffset: position, as: UInt8.self)
    }

    /// Where the value starting at `start`, an item or a member's value of this container, ends
    /// (just past its last byte).
    @inline(__always)
    private func end(from start: Int) -> Int {
        switch byte(at: start) {
        case UInt8(ascii: "\""): return stringEnd(from: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["): return containerEnd(from: start)
        case UInt8(ascii: "t"), UInt8(ascii: "n"): return start &+ 4
        case UInt8(ascii: "f"): return start &+ 5
        default:
            // A number: a comma, a bracket or whitespace follows it.
            var position = start &+ 1
            while JSONValueBytes.continuesNumber(byte(at: position)) { position &+= 1 }
            return position
        }
    }

    /// Where the object or array starting at `start` ends (just past its closing bracket).
    private func containerEnd(from start: Int) -> Int {
        var depth = 0
        var position = start
        while true {
            switch byte(at: position) {
            case UInt8(ascii: "\""):
                position = stringEnd(from: position)
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth &+= 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth &-= 1
                if depth == 0 { return position &+ 1 }
            default: break
            }
            position &+= 1
        }
    }

    /// Where the string whose opening quote is at `start` ends (just past its closing quote):
    /// the first quote not escaped, found with `memchr` (vectorised by the C library; a
    /// quote is escaped when an odd number of backslashes precedes it).
    private func stringEnd(from start: Int) -> Int {
        let base = buffer.baseAddress.unsafelyUnwrapped
        var position = start &+ 1
        while true {
            // The string has a closing quote before the end of the container.
            let found = memchr(base + position, Int32(UInt8(ascii: "\"")), range.upperBound &- position)
                .unsafelyUnwrapped
            let quote = UnsafeRawPointer(found) - base
            var backslashes = 0
            while byte(at: quote &- 1 &- backslashes) == UInt8(ascii: "\\") { backslashes &+= 1 }
            if backslashes & 1 == 0 { return quote &+ 1 }
            position = quote &+ 1
        }
    }

    /// Whether `range` (a string's content) holds a backslash, i.e. an escape.
    private func hasEscapes(_ range: Range<Int>) -> Bool {
        !range.isEmpty && memchr(buffer.baseAddress! + range.lowerBound, Int32(UInt8(ascii: "\\")), range.count) != nil
    }

    /// The first byte at or after `start` that is not whitespace.
    @inline(__always)
    private func skipWhitespace(from start: Int) -> Int {
        var position = start
        while JSONValueBytes.isWhitespace(byte(at: position)) { position &+= 1 }
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
