/// Checks that bytes are exactly one strict RFC 8259 JSON text, without building anything.
///
/// Single pass, no recursion and no heap allocation on the valid path (see `JSONScanner`).
/// Rejects invalid UTF-8, unpaired surrogate escapes, trailing commas, leading zeros,
/// `NaN`/`Infinity`, control characters in strings, unknown escapes, a byte-order mark and
/// anything after the value; nesting deeper than `maxDepth` (config `max_depth`) is an error.
/// A value of any type may stand at the top. Stateless and thread-safe.
public struct JSONValidator: Sendable {
    public let maxDepth: Int

    public init(maxDepth: Int = JSONLimits.defaultMaxDepth) {
        self.maxDepth = maxDepth
    }

    /// Throws the first problem found in `bytes`.
    public func validate(_ bytes: UnsafeRawBufferPointer) throws(JSONError) {
        var handler = JSONIgnoringHandler()
        try JSONScanner.scan(bytes, maxDepth: maxDepth, handler: &handler)
    }

    /// Whether `bytes` are one valid JSON text.
    public func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        do {
            try validate(bytes)
            return true
        } catch {
            return false
        }
    }

    /// Throws the first problem found in `bytes`.
    public func validate<Bytes: Sequence<UInt8>>(_ bytes: Bytes) throws(JSONError) {
        let failure =
            bytes.withContiguousStorageIfAvailable { firstError(in: UnsafeRawBufferPointer($0)) }
            ?? Array(bytes).withUnsafeBytes { firstError(in: $0) }
        if let failure { throw failure }
    }

    private func firstError(in bytes: UnsafeRawBufferPointer) -> JSONError? {
        do throws(JSONError) {
            try validate(bytes)
            return nil
        } catch {
            return error
        }
    }
}
