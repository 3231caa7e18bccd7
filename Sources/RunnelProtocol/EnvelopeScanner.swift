import RunnelJSON

/// Reads a protocol line's envelope in one validating pass: a request, as the server reads
/// it, or a server line, as the `runnel` CLI reads it (the two share `ref`, `sid`, `value`,
/// `subject` and `message`).
///
/// `scan` walks the line exactly once with the strict grammar of `JSONValidator` (so a
/// request whose `value` is invalid JSON is rejected as a whole) and records where the
/// well-known top-level fields' values sit; nothing is decoded and nothing is allocated on
/// the heap. A line that is not JSON, or is JSON but not an object, throws `badJSON`; what
/// the fields must hold is the caller's business (`ScannedEnvelope`'s accessors throw
/// `badRequest`). When a key is repeated, the last member wins (as in `JSONObject`).
/// Keys are compared after unescaping, so `"\u006fp"` is `op`. The line should not include
/// its `\n`; a trailing `\r` is whitespace and is accepted. Stateless and thread-safe.
public struct EnvelopeScanner: Sendable {
    public let maxDepth: Int

    public init(maxDepth: Int = JSONLimits.defaultMaxDepth) {
        self.maxDepth = maxDepth
    }

    /// Validates `line` and returns its top-level fields. The result points into `line`
    /// and is valid only while those bytes are.
    public func scan(_ line: UnsafeRawBufferPointer) throws(ProtocolError) -> ScannedEnvelope {
        guard line.count < Int(UInt32.max) else { throw ProtocolError(.badJSON, "line too long") }
        var collector = EnvelopeFieldCollector(input: line)
        do throws(JSONError) {
            try JSONScanner.scan(line, maxDepth: maxDepth, handler: &collector)
        } catch {
            throw ProtocolError(.badJSON, "invalid JSON: \(error)")
        }
        guard collector.isObject else { throw ProtocolError(.badJSON, "a request must be a JSON object") }
        return ScannedEnvelope(line: line, maxDepth: maxDepth, collector: collector)
    }
}

/// The fields `EnvelopeScanner` records, one slot per `EnvelopeKey`.
package struct EnvelopeFields {
    private var op, ref, subject, sid, value, ops, kind, capacity, message, from, durable,
        positions, conflate, key, delete: EnvelopeField?

    package subscript(key: EnvelopeKey) -> EnvelopeField? {
        get {
            switch key {
            case .op: return op
            case .ref: return ref
            case .subject: return subject
            case .sid: return sid
            case .value: return value
            case .ops: return ops
            case .kind: return kind
            case .capacity: return capacity
            case .message: return message
            case .from: return from
            case .durable: return durable
            case .positions: return positions
            case .conflate: return conflate
            case .key: return self.key
            case .delete: return delete
            }
        }
        set {
            switch key {
            case .op: op = newValue
            case .ref: ref = newValue
            case .subject: subject = newValue
            case .sid: sid = newValue
            case .value: value = newValue
            case .ops: ops = newValue
            case .kind: kind = newValue
            case .capacity: capacity = newValue
            case .message: message = newValue
            case .from: from = newValue
            case .durable: durable = newValue
            case .positions: positions = newValue
            case .conflate: conflate = newValue
            case .key: self.key = newValue
            case .delete: delete = newValue
            }
        }
    }
}

/// Records the values of a top-level object's members (depth 1), and where the members of
/// the last object among those values sit (`nestedMembers`).
package struct TopLevelMemberCollector<Matcher: TopLevelKeyMatcher>: JSONScanHandler {
    package let input: UnsafeRawBufferPointer
    package var matcher: Matcher
    package private(set) var isObject = false
    private var current: Matcher.Slot?
    private var containerStart = 0
    /// The members of the last object that is a top-level member's value, noted as the scan
    /// passes them (what `JSONValueBytes.lastMember(named:noting:)` notes), and where that
    /// object starts (-1: none yet). A request has one such object at most, a `pub`'s value.
    package private(set) var nestedMembers = JSONMemberIndex()
    package private(set) var nestedObjectStart = -1

    package init(input: UnsafeRawBufferPointer, matcher: Matcher) {
        self.input = input
        self.matcher = matcher
    }

    private mutating func store(_ field: EnvelopeField) {
        if let current { matcher.store(field, in: current) }
    }

    package mutating func beginObject(at offset: Int, depth: Int) {
        if depth == 0 {
            isObject = true
        } else if depth == 1 {
            containerStart = offset
            nestedObjectStart = offset
            nestedMembers.begin()
        }
    }

    package mutating func endObject(end: Int, depth: Int) {
        if depth == 1 { store(EnvelopeField(kind: .object, range: containerStart..<end)) }
    }

    package mutating func beginArray(at offset: Int, depth: Int) {
        if depth == 1 { containerStart = offset }
    }

    package mutating func endArray(end: Int, depth: Int) {
        if depth == 1 { store(EnvelopeField(kind: .array, range: containerStart..<end)) }
    }

    package mutating func key(_ token: JSONStringToken, depth: Int) {
        if depth == 2 {
            nestedMembers.note(key: token.range.lowerBound &+ 1 &- nestedObjectStart, escaped: token.hasEscapes)
            return
        }
        guard depth == 1 else { return }
        let content = UnsafeRawBufferPointer(rebasing: input[token.content])
        if token.hasEscapes {
            let name = JSONStringDecoding.string(content: content, hasEscapes: true)
            var utf8 = name
            current = utf8.withUTF8 { matcher.slot(forKey: UnsafeRawBufferPointer($0), in: UnsafeRawBufferPointer($0)) }
        } else {
            current = matcher.slot(forKey: content, in: input)
        }
    }

    package mutating func string(_ token: JSONStringToken, depth: Int) {
        if depth == 1 { store(EnvelopeField(kind: .string, range: token.range, flag: token.hasEscapes)) }
    }

    package mutating func number(_ token: JSONNumberToken, depth: Int) {
        if depth == 1 { store(EnvelopeField(kind: .number, range: token.range, flag: token.isInteger)) }
    }

    package mutating func literal(_ literal: JSONLiteral, range: Range<Int>, depth: Int) {
        if depth == 1 { store(EnvelopeField(kind: literal == .null ? .null : .bool, range: range)) }
    }
}

/// Decides which top-level keys a `TopLevelMemberCollector` keeps, and keeps them.
package protocol TopLevelKeyMatcher {
    associatedtype Slot
    /// The slot for the unescaped key `name`, which lies inside `buffer` (the line, or the
    /// decoded name itself), or nil to ignore the member.
    func slot(forKey name: UnsafeRawBufferPointer, in buffer: UnsafeRawBufferPointer) -> Slot?
    mutating func store(_ field: EnvelopeField, in slot: Slot)
}

/// Keeps the well-known request fields.
package struct EnvelopeKeyMatcher: TopLevelKeyMatcher {
    package var fields = EnvelopeFields()

    @inline(__always) package func slot(forKey name: UnsafeRawBufferPointer, in buffer: UnsafeRawBufferPointer)
        -> EnvelopeKey?
    {
        EnvelopeKey.matching(name, in: buffer)
    }

    @inline(__always) package mutating func store(_ field: EnvelopeField, in slot: EnvelopeKey) { fields[slot] = field }
}

/// Keeps the member with one given name.
package struct NamedKeyMatcher: TopLevelKeyMatcher {
    package let name: [UInt8]
    package var found: EnvelopeField?

    package func slot(forKey key: UnsafeRawBufferPointer, in buffer: UnsafeRawBufferPointer) -> Void? {
        key.elementsEqual(name) ? () : nil
    }

    package mutating func store(_ field: EnvelopeField, in slot: Void) { found = field }
}

package typealias EnvelopeFieldCollector = TopLevelMemberCollector<EnvelopeKeyMatcher>

extension TopLevelMemberCollector where Matcher == EnvelopeKeyMatcher {
    package init(input: UnsafeRawBufferPointer) { self.init(input: input, matcher: EnvelopeKeyMatcher()) }

    package var fields: EnvelopeFields { matcher.fields }
}
