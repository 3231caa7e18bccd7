/// The rule for a map's key (version 1.3): a string of 1 to 255 bytes of UTF-8, read from a
/// `pub`'s `key` (or an HTTP `?key=`).
///
/// Thread rules: pure functions. Lifetime rule: none.
package enum MapKey {
    package static let maxBytes = 255

    /// What a key that breaks the rule gets.
    private static var refusal: ProtocolError {
        ProtocolError(.badRequest, "field 'key' must be a string of 1 to \(maxBytes) bytes")
    }

    /// `bad_request` unless `key` is a valid key.
    package static func check(_ key: String) throws(ProtocolError) {
        guard (1...maxBytes).contains(key.utf8.count) else { throw refusal }
    }

    /// The `key` field of `request`: `bad_request` when it is not a valid key.
    package static func read(_ field: EnvelopeField, of request: ScannedEnvelope) throws(ProtocolError) -> String {
        guard let key = request.string(field) else { throw refusal }
        try check(key)
        return key
    }
}
