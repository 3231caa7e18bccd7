import RunnelBytes

/// A valid JSON value kept as exact bytes, decoded into a `JSONValue` only when a stage needs
/// to look inside.
///
/// A published value is validated once (as part of its request line), copied once into a
/// `ByteBuffer`, and from then on passed by reference: every subscriber's `next` line writes
/// that same buffer, byte for byte as the client sent it (`1.0` stays `1.0`, `"\u00e9"` stays
/// escaped). Values computed by expressions come in through `init(encoding:)`. Immutable and
/// `Sendable`; copying one retains a buffer. Decoding is not cached: each `decoded()` call
/// parses again, so a caller that needs the tree several times keeps it.
public struct RawJSON: Sendable, CustomStringConvertible {
    /// The value's bytes: one JSON value, no surrounding whitespace when it came from
    /// `EnvelopeScanner` or `init(encoding:)`.
    public let buffer: ByteBuffer

    /// Validates `bytes` (strictly, with the nesting limit) and keeps a copy.
    public init(validating bytes: UnsafeRawBufferPointer, maxDepth: Int = JSONLimits.defaultMaxDepth) throws(JSONError)
    {
        try JSONValidator(maxDepth: maxDepth).validate(bytes)
        buffer = ByteBuffer(copying: bytes)
    }

    /// Validates `text` (strictly, with the nesting limit) and keeps its UTF-8.
    public init(validating text: String, maxDepth: Int = JSONLimits.defaultMaxDepth) throws(JSONError) {
        var text = text
        let result = text.withUTF8 { utf8 -> Result<ByteBuffer, JSONError> in
            let bytes = UnsafeRawBufferPointer(utf8)
            do throws(JSONError) {
                try JSONValidator(maxDepth: maxDepth).validate(bytes)
                return .success(ByteBuffer(copying: bytes))
            } catch {
                return .failure(error)
            }
        }
        buffer = try result.get()
    }

    /// Wraps bytes that are already known to be one valid JSON value (for instance a range
    /// the request scanner validated). Not checked: invalid bytes here would reach clients.
    public init(validatedBuffer buffer: ByteBuffer) {
        self.buffer = buffer
    }

    /// The compact encoding of a computed value.
    public init(encoding value: JSONValue) {
        var writer = JSONWriter()
        writer.write(value)
        buffer = writer.makeBuffer()
    }

    /// JSON `null`.
    public static let null = RawJSON(validatedBuffer: ByteBuffer(Array("null".utf8)))

    /// Parses the bytes into a tree. The bytes were validated, so this fails only when a
    /// number is too large for a Double (`numberOutOfRange`), or for an unchecked
    /// `init(validatedBuffer:)` that was given bad bytes. No depth limit applies here: the
    /// limit was enforced when the bytes were validated, and parsing does not recurse.
    public func decoded() throws(JSONError) -> JSONValue {
        try withExtendedLifetime(buffer) { () throws(JSONError) -> JSONValue in
            try JSONParser(maxDepth: .max).parse(buffer.bytes)
        }
    }

    /// The number of bytes.
    public var count: Int { buffer.count }

    /// Calls `body` with the bytes, which stay valid only during the call.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try withExtendedLifetime(buffer) { try body(buffer.bytes) }
    }

    /// Whether both hold exactly the same bytes (not structural equality: `1.0` and `1`
    /// differ here; compare `decoded()` values for that).
    public func hasSameBytes(as other: RawJSON) -> Bool { buffer == other.buffer }

    /// The bytes as text.
    public var description: String { withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
}
