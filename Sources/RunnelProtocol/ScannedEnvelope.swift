import RunnelBytes
import RunnelJSON

/// A validated protocol line (a request, or a server line) and where its top-level fields are,
/// as `EnvelopeScanner` found them.
///
/// It points into the caller's line buffer and is valid only while those bytes are (use it
/// within the read callback that delivered the line; copy out what must outlive it, for
/// instance with `rawJSON(_:)`). Field accessors come in two layers: by `EnvelopeField`
/// (type-checked reads that return nil on a type mismatch) and by `EnvelopeKey` (protocol
/// reads that throw `badRequest` with a message naming the field).
public struct ScannedEnvelope {
    /// The whole line as scanned.
    public let line: UnsafeRawBufferPointer
    package let maxDepth: Int
    package let fields: EnvelopeFields
    /// The members of the last object the scan met as a top-level member's value, and where
    /// it starts (`valueMembers`).
    private let nestedMembers: JSONMemberIndex
    private let nestedObjectStart: Int

    package init(line: UnsafeRawBufferPointer, maxDepth: Int, collector: EnvelopeFieldCollector) {
        self.line = line
        self.maxDepth = maxDepth
        fields = collector.fields
        nestedMembers = collector.nestedMembers
        nestedObjectStart = collector.nestedObjectStart
    }

    // MARK: - Where the fields are

    /// The last member named `key`, if any.
    public subscript(key: EnvelopeKey) -> EnvelopeField? { fields[key] }

    public var op: EnvelopeField? { fields[.op] }
    public var ref: EnvelopeField? { fields[.ref] }
    public var subject: EnvelopeField? { fields[.subject] }
    public var sid: EnvelopeField? { fields[.sid] }
    public var value: EnvelopeField? { fields[.value] }
    public var ops: EnvelopeField? { fields[.ops] }
    public var kind: EnvelopeField? { fields[.kind] }
    public var capacity: EnvelopeField? { fields[.capacity] }
    public var message: EnvelopeField? { fields[.message] }

    /// The last top-level member named `name`, well-known or not. Other names cost a second
    /// walk over the (already validated) line.
    public func field(named name: String) -> EnvelopeField? {
        var name = name
        return name.withUTF8 { utf8 -> EnvelopeField? in
            let bytes = UnsafeRawBufferPointer(utf8)
            if let key = EnvelopeKey.matching(bytes) { return fields[key] }
            var finder = TopLevelMemberCollector(input: line, matcher: NamedKeyMatcher(name: Array(bytes)))
            do throws(JSONError) {
                try JSONScanner.scan(line, maxDepth: maxDepth, handler: &finder)
            } catch {
                return nil  // cannot happen: the line was validated with the same limit
            }
            return finder.matcher.found
        }
    }

    // MARK: - Reading a field

    /// The field's exact bytes.
    public func bytes(_ field: EnvelopeField) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: line[field.range])
    }

    /// The field's exact bytes, as text.
    public func text(_ field: EnvelopeField) -> String { String(decoding: bytes(field), as: UTF8.self) }

    /// The unescaped string, or nil when the field is not a string.
    public func string(_ field: EnvelopeField) -> String? {
        guard field.kind == .string else { return nil }
        let content = UnsafeRawBufferPointer(
            rebasing: line[(field.range.lowerBound + 1)..<(field.range.upperBound - 1)])
        return JSONStringDecoding.string(content: content, hasEscapes: field.flag)
    }

    /// The number, or nil when the field is not a number or is too large for a Double.
    public func number(_ field: EnvelopeField) -> Double? {
        guard field.kind == .number else { return nil }
        return JSONNumberDecoding.double(bytes(field))
    }

    /// The boolean, or nil when the field is not `true` or `false`.
    public func bool(_ field: EnvelopeField) -> Bool? {
        guard field.kind == .bool else { return nil }
        return line[field.range.lowerBound] == UInt8(ascii: "t")
    }

    /// A copy of the field's exact bytes that outlives the line: the value to store and fan out.
    public func rawJSON(_ field: EnvelopeField) -> RawJSON {
        RawJSON(validatedBuffer: ByteBuffer(copying: bytes(field)))
    }

    /// The field decoded into a tree.
    public func decoded(_ field: EnvelopeField) throws(JSONError) -> JSONValue {
        try JSONParser(maxDepth: .max).parse(bytes(field))
    }

    // MARK: - Protocol reads (throw `badRequest`)

    /// The `op` field: missing or not a string is `badRequest`; a string that names no
    /// operation of ours is `.unknown` (reply `unknown_op`). Matching allocates nothing
    /// unless the name is unknown or escaped.
    public func operation() throws(ProtocolError) -> RequestOperation {
        guard let field = fields[.op] else { throw ProtocolError(.badRequest, "missing field 'op'") }
        guard field.kind == .string else { throw ProtocolError(.badRequest, "field 'op' must be a string") }
        if !field.flag,
            let known = RequestOp.matching(
                UnsafeRawBufferPointer(rebasing: line[(field.range.lowerBound + 1)..<(field.range.upperBound - 1)]),
                in: line)
        {
            return .known(known)
        }
        let name = string(field)!
        if let known = RequestOp(rawValue: name) { return .known(known) }
        return .unknown(name)
    }

    /// The string in `key`; nil when absent; `badRequest` when not a string.
    public func string(_ key: EnvelopeKey) throws(ProtocolError) -> String? {
        guard let field = fields[key] else { return nil }
        guard let string = string(field) else {
            throw ProtocolError(.badRequest, "field '\(key.name)' must be a string")
        }
        return string
    }

    /// The string in the field `name`, which the scan does not pick out (`EnvelopeKey`); nil
    /// when absent; `badRequest` when not a string.
    public func string(named name: String) throws(ProtocolError) -> String? {
        guard let field = field(named: name) else { return nil }
        guard let string = string(field) else { throw ProtocolError(.badRequest, "field '\(name)' must be a string") }
        return string
    }

    /// The string in `key`; `badRequest` when absent or not a string.
    public func requiredString(_ key: EnvelopeKey) throws(ProtocolError) -> String {
        guard let string = try string(key) else { throw ProtocolError(.badRequest, "missing field '\(key.name)'") }
        return string
    }

    /// The number in `key`; nil when absent; `badRequest` when not a number (or beyond a Double).
    public func number(_ key: EnvelopeKey) throws(ProtocolError) -> Double? {
        guard let field = fields[key] else { return nil }
        guard let number = number(field) else {
            throw ProtocolError(.badRequest, "field '\(key.name)' must be a number")
        }
        return number
    }

    /// The boolean in `key`; nil when absent; `badRequest` when not `true` or `false`.
    public func bool(_ key: EnvelopeKey) throws(ProtocolError) -> Bool? {
        guard let field = fields[key] else { return nil }
        guard let flag = bool(field) else {
            throw ProtocolError(.badRequest, "field '\(key.name)' must be true or false")
        }
        return flag
    }

    /// The integer in `key` (any integral number: `3`, `3.0`, `3e0`); nil when absent;
    /// `badRequest` when not an integral number that fits an `Int`. Ranges are the caller's.
    public func integer(_ key: EnvelopeKey) throws(ProtocolError) -> Int? {
        guard let number = try number(key) else { return nil }
        guard number.magnitude < 9.2e18, let integer = Int(exactly: number) else {
            throw ProtocolError(.badRequest, "field '\(key.name)' must be an integer")
        }
        return integer
    }

    /// The value in `key`, any JSON, as exact bytes that outlive the line; nil when absent.
    public func rawJSON(_ key: EnvelopeKey) -> RawJSON? {
        fields[key].map { rawJSON($0) }
    }

    /// Where the members of `value` sit, relative to its first byte, when it is an object the
    /// scan indexed (`JSONMemberIndex`); else an index not built, which the first lookup
    /// builds. (A repeated `value` key: the index is the last object's, used only when that
    /// object is the last `value`.)
    public var valueMembers: JSONMemberIndex {
        guard let value = fields[.value], value.range.lowerBound == nestedObjectStart else { return JSONMemberIndex() }
        return nestedMembers
    }

    /// The exact bytes of `ref` to echo; nil when absent; `badRequest` when it is an array or
    /// object (the protocol allows any scalar).
    public func scalarRef() throws(ProtocolError) -> UnsafeRawBufferPointer? {
        guard let field = fields[.ref] else { return nil }
        guard field.isScalar else { throw ProtocolError(.badRequest, "field 'ref' must be a scalar") }
        return bytes(field)
    }
}
