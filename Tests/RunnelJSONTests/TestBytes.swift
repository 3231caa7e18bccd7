@testable import RunnelJSON

/// Helpers shared by the JSON tests: run the byte-level APIs on strings and byte arrays.
enum TestBytes {
    static func validate(_ text: String, maxDepth: Int = JSONLimits.defaultMaxDepth) -> JSONError? {
        validate(Array(text.utf8), maxDepth: maxDepth)
    }

    static func validate(_ bytes: [UInt8], maxDepth: Int = JSONLimits.defaultMaxDepth) -> JSONError? {
        do {
            try JSONValidator(maxDepth: maxDepth).validate(bytes)
            return nil
        } catch {
            return error
        }
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
