import RunnelBytes
import RunnelJSON

/// One request line being handled: the scanned line and the protocol's reads of its fields.
///
/// It points into the connection's read buffer, so it lives only while its line is handled;
/// `rawJSON` copies out what must outlive it (a published value, a `ref`).
package struct Request {
    package let scanned: ScannedEnvelope
    /// The `ref` to echo in the reply: a copy of its exact bytes; nil when absent or unusable.
    package let ref: RawJSON?
    /// Why `ref` is unusable (an array or object), reported once `op` is known.
    private let refProblem: ProtocolError?

    /// Scans `line`: anything that is not one valid JSON object is `bad_json`.
    package init(parsing line: UnsafeRawBufferPointer, maxDepth: Int) throws(ProtocolError) {
        scanned = try EnvelopeScanner(maxDepth: maxDepth).scan(line)
        do throws(ProtocolError) {
            ref = try scanned.scalarRef().map { RawJSON(validatedBuffer: ByteBuffer(copying: $0)) }
            refProblem = nil
        } catch {
            ref = nil
            refProblem = error
        }
    }

    /// The operation: `bad_request` without a string `op` or with an array/object `ref`.
    package func operation() throws(ProtocolError) -> RequestOperation {
        if let refProblem { throw refProblem }
        return try scanned.operation()
    }

    /// The string in `key`; nil when absent; `bad_request` when not a string.
    package func string(_ key: EnvelopeKey) throws(ProtocolError) -> String? {
        try scanned.string(key)
    }

    /// The string in `key`; `bad_request` when absent or not a string.
    package func requiredString(_ key: EnvelopeKey) throws(ProtocolError) -> String {
        try scanned.requiredString(key)
    }

    /// The integral number in `key`; nil when absent; `bad_request` otherwise.
    package func integer(_ key: EnvelopeKey) throws(ProtocolError) -> Int? {
        try scanned.integer(key)
    }

    /// The boolean in `key`; nil when absent; `bad_request` when not a boolean.
    package func bool(_ key: EnvelopeKey) throws(ProtocolError) -> Bool? { try scanned.bool(key) }

    /// The value in `key` as exact bytes that outlive the line; nil when absent.
    package func raw(_ key: EnvelopeKey) -> RawJSON? { scanned.rawJSON(key) }

    /// `subject` as a plain subject name: `bad_request` when missing or not a valid name.
    package func subjectName() throws(ProtocolError) -> String {
        let name = try requiredString(.subject)
        try SubjectName.check(name)
        return name
    }

    /// The length of the `ops` field's JSON text (0 without one): what its stages can pin.
    package var stagesByteCount: Int { scanned.ops?.range.count ?? 0 }

    /// The stage list in `ops`: absent or `[]` is no stages; anything but an array of
    /// objects is `bad_request`.
    package func stages() throws(ProtocolError) -> [JSONValue] {
        guard let field = scanned.ops else { return [] }
        guard field.kind == .array else { throw ProtocolError(.badRequest, "field 'ops' must be an array of stages") }
        let decoded: JSONValue
        do {
            decoded = try scanned.decoded(field)
        } catch {
            throw ProtocolError(.badRequest, "field 'ops': \(error)")
        }
        guard case .array(let stages) = decoded else { return [] }
        return stages
    }
}
