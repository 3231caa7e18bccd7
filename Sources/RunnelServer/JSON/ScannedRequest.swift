import RunnelUV

/// A validated request line and where its top-level fields are, as `RequestScanner` found
/// them.
///
/// It points into the caller's line buffer and is valid only while those bytes are (use it
/// within the read callback that delivered the line; copy out what must outlive it, for
/// instance with `rawJSON(_:)`). Field accessors come in two layers: by `RequestField`
/// (type-checked reads that return nil on a type mismatch) and by `RequestKey` (protocol
/// reads that throw `badRequest` with a message naming the field).
public struct ScannedRequest {
    /// The whole line as scanned.
    public let line: UnsafeRawBufferPointer
    let maxDepth: Int
    let fields: RequestFields

    init(line: UnsafeRawBufferPointer, maxDepth: Int, fields: RequestFields) {
        self.line = line
        self.maxDepth = maxDepth
        self.fields = fields
    }

    // MARK: - Where the fields are

    /// The last member named `key`, if any.
    public subscript(key: RequestKey) -> RequestField? { fields[key] }

    public var op: RequestField? { fields[.op] }
    public var ref: RequestField? { fields[.ref] }
    public var subject: RequestField? { fields[.subject] }
    public var sid: RequestField? { fields[.sid] }
    public var value: RequestField? { fields[.value] }
    public var ops: RequestField? { fields[.ops] }
    public var kind: RequestField? { fields[.kind] }
    public var capacity: RequestField? { fields[.capacity] }
    public var message: RequestField? { fields[.message] }
    public var prefix: RequestField? { fields[.prefix] }
    public var token: RequestField? { fields[.token] }

    /// The last top-level member named `name`, well-known or not. Other names cost a second
    /// walk over the (already validated) line.
    public func field(named name: String) -> RequestField? {
        var name = name
        return name.withUTF8 { utf8 -> RequestField? in
            let bytes = UnsafeRawBufferPointer(utf8)
            if let key = RequestKey.matching(bytes) { return fields[key] }
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
    public func bytes(_ field: RequestField) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: line[field.range])
    }

    /// The field's exact bytes, as text.
    public func text(_ field: RequestField) -> String { String(decoding: bytes(field), as: UTF8.self) }

    /// The unescaped string, or nil when the field is not a string.
    public func string(_ field: RequestField) -> String? {
        guard field.kind == .string else { return nil }
        let content = UnsafeRawBufferPointer(
            rebasing: line[(field.range.lowerBound + 1)..<(field.range.upperBound - 1)])
        return JSONStringDecoding.string(content: content, hasEscapes: field.flag)
    }

    /// The number, or nil when the field is not a number or is too large for a Double.
    public func number(_ field: RequestField) -> Double? {
        guard field.kind == .number else { return nil }
        return JSONNumberDecoding.double(bytes(field))
    }

    /// The boolean, or nil when the field is not `true` or `false`.
    public func bool(_ field: RequestField) -> Bool? {
        guard field.kind == .bool else { return nil }
        return line[field.range.lowerBound] == UInt8(ascii: "t")
    }

    /// A copy of the field's exact bytes that outlives the line: the value to store and fan out.
    public func rawJSON(_ field: RequestField) -> RawJSON {
        RawJSON(validatedBuffer: ByteBuffer(copying: bytes(field)))
    }

    /// The field decoded into a tree.
    public func decoded(_ field: RequestField) throws(JSONError) -> JSONValue {
        try JSONParser(maxDepth: .max).parse(bytes(field))
    }

    // MARK: - Protocol reads (throw `badRequest`)

    /// The `op` field: missing or not a string is `badRequest`; a string that names no
    /// operation of ours is `.unknown` (reply `unknown_op`). Matching allocates nothing
    /// unless the name is unknown or escaped.
    public func operation() throws(RequestError) -> RequestOperation {
        guard let field = fields[.op] else { throw RequestError(.badRequest, "missing field 'op'") }
        guard field.kind == .string else { throw RequestError(.badRequest, "field 'op' must be a string") }
        if !field.flag,
            let known = RequestOp.matching(
                UnsafeRawBufferPointer(rebasing: line[(field.range.lowerBound + 1)..<(field.range.upperBound - 1)]))
        {
            return .known(known)
        }
        let name = string(field)!
        if let known = RequestOp(rawValue: name) { return .known(known) }
        return .unknown(name)
    }

    /// The string in `key`; nil when absent; `badRequest` when not a string.
    public func string(_ key: RequestKey) throws(RequestError) -> String? {
        guard let field = fields[key] else { return nil }
        guard let string = string(field) else {
            throw RequestError(.badRequest, "field '\(key.name)' must be a string")
        }
        return string
    }

    /// The string in `key`; `badRequest` when absent or not a string.
    public func requiredString(_ key: RequestKey) throws(RequestError) -> String {
        guard let string = try string(key) else { throw RequestError(.badRequest, "missing field '\(key.name)'") }
        return string
    }

    /// The number in `key`; nil when absent; `badRequest` when not a number (or beyond a Double).
    public func number(_ key: RequestKey) throws(RequestError) -> Double? {
        guard let field = fields[key] else { return nil }
        guard let number = number(field) else {
            throw RequestError(.badRequest, "field '\(key.name)' must be a number")
        }
        return number
    }

    /// The integer in `key` (any integral number: `3`, `3.0`, `3e0`); nil when absent;
    /// `badRequest` when not an integral number that fits an `Int`. Ranges are the caller's.
    public func integer(_ key: RequestKey) throws(RequestError) -> Int? {
        guard let number = try number(key) else { return nil }
        guard number.magnitude < 9.2e18, let integer = Int(exactly: number) else {
            throw RequestError(.badRequest, "field '\(key.name)' must be an integer")
        }
        return integer
    }

    /// The value in `key`, any JSON, as exact bytes that outlive the line; nil when absent.
    public func rawJSON(_ key: RequestKey) -> RawJSON? {
        fields[key].map { rawJSON($0) }
    }

    /// The exact bytes of `ref` to echo; nil when absent; `badRequest` when it is an array or
    /// object (the protocol allows any scalar).
    public func scalarRef() throws(RequestError) -> UnsafeRawBufferPointer? {
        guard let field = fields[.ref] else { return nil }
        guard field.isScalar else { throw RequestError(.badRequest, "field 'ref' must be a scalar") }
        return bytes(field)
    }
}
