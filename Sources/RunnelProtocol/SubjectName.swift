/// The protocol's rules for subject names and subscription patterns.
///
/// A name is 1 to 255 UTF-8 bytes of dot-separated tokens; a token is non-empty and holds no
/// whitespace, control character, `*` or `>`. A pattern is a name whose tokens may also be
/// exactly `*` (one token) or exactly `>` (one or more tokens, last token only). Both checks
/// walk the UTF-8 bytes once and touch Unicode properties only for non-ASCII bytes, because the
/// server runs them on every `pub` and `sub`. Pure functions: safe from any thread.
public enum SubjectName {
    /// The longest name or pattern, in UTF-8 bytes.
    public static let maxBytes = 255

    /// Why `name` is not a valid subject name, or `nil` when it is.
    public static func problem(withName name: String) -> String? {
        problem(with: name, allowWildcards: false)
    }

    /// Why `pattern` is not a valid subscription target (a plain name or a pattern), or `nil`.
    public static func problem(withPattern pattern: String) -> String? {
        problem(with: pattern, allowWildcards: true)
    }

    /// Throws `bad_request` naming the problem when `name` is not a valid subject name.
    package static func check(_ name: String) throws(ProtocolError) {
        if let problem = problem(withName: name) {
            throw ProtocolError(.badRequest, "bad subject name: \(problem)")
        }
    }

    /// Whether `name` is a valid subject name (no wildcards).
    public static func isValidName(_ name: String) -> Bool { problem(withName: name) == nil }

    /// Whether `pattern` is a valid name or pattern.
    public static func isValidPattern(_ pattern: String) -> Bool { problem(withPattern: pattern) == nil }

    /// Whether a valid pattern holds a wildcard token (`*` or `>`), so it names no single subject.
    ///
    /// In a valid pattern those bytes only stand as whole tokens, so finding one is enough.
    public static func isPattern(_ pattern: String) -> Bool {
        pattern.utf8.contains { $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: ">") }
    }

    private static func problem(with text: String, allowWildcards: Bool) -> String? {
        let bytes = text.utf8
        if bytes.isEmpty { return "a subject name must not be empty" }
        if bytes.count > maxBytes {
            return "a subject name must be at most \(maxBytes) bytes, got \(bytes.count)"
        }
        var tokenLength = 0
        var tokenIndex = 0
        // The wildcard byte that began the current token, when it is `*` or `>`.
        var wildcard: UInt8? = nil
        var sawTailWildcard = false
        var hasNonASCII = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                if tokenLength == 0 { return emptyTokenProblem(tokenIndex) }
                if sawTailWildcard { return "'>' may only be the last token" }
                if wildcard == UInt8(ascii: ">") { sawTailWildcard = true }
                tokenLength = 0
                tokenIndex += 1
                wildcard = nil
                continue
            }
            if byte == UInt8(ascii: "*") || byte == UInt8(ascii: ">") {
                if !allowWildcards {
                    return "'\(Character(Unicode.Scalar(byte)))' is not allowed in a subject name"
                }
                if tokenLength != 0 { return wildcardNotWholeProblem(byte) }
                wildcard = byte
            } else {
                if wildcard != nil { return wildcardNotWholeProblem(wildcard!) }
                if byte < 0x20 || byte == 0x7F { return "a subject name must not hold control characters" }
                if byte == UInt8(ascii: " ") { return "a subject name must not hold whitespace" }
                if byte >= 0x80 { hasNonASCII = true }
            }
            tokenLength += 1
        }
        if tokenLength == 0 { return emptyTokenProblem(tokenIndex) }
        if sawTailWildcard { return "'>' may only be the last token" }
        if hasNonASCII {
            for scalar in text.unicodeScalars where scalar.value >= 0x80 {
                if scalar.properties.isWhitespace { return "a subject name must not hold whitespace" }
                if scalar.properties.generalCategory == .control {
                    return "a subject name must not hold control characters"
                }
            }
        }
        return nil
    }

    private static func emptyTokenProblem(_ index: Int) -> String {
        "a subject name is dot-separated non-empty tokens; token \(index + 1) is empty"
    }

    private static func wildcardNotWholeProblem(_ byte: UInt8) -> String {
        "'\(Character(Unicode.Scalar(byte)))' must stand alone as a whole token"
    }
}
