/// Why a run of bytes is not acceptable JSON, and where the problem was found.
///
/// Thrown (typed) by the validator, the parser and `RawJSON`; the request scanner turns it into
/// a `bad_json` reply. `offset` is the byte offset into the input at which scanning stopped.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// The input ended inside a value, or held no value at all.
        case unexpectedEnd
        /// A byte that cannot start or continue what the grammar expects here.
        case unexpectedByte
        /// Bytes after the one top-level value (other than whitespace).
        case trailingData
        /// A string holds bytes that are not well-formed UTF-8 (overlong forms, encoded
        /// surrogates, code points above U+10FFFF, stray continuation bytes, truncation).
        case invalidUTF8
        /// A string holds an unescaped control character (U+0000 to U+001F).
        case controlCharacter
        /// A backslash escape that JSON does not define, or a malformed `\u` escape.
        case invalidEscape
        /// A `\u` escape of a UTF-16 surrogate that is not part of a high+low pair.
        case loneSurrogate
        /// A number that breaks the grammar (leading zero, missing digits).
        case invalidNumber
        /// A number too large in magnitude for a Double (only when decoding into `JSONValue`).
        case numberOutOfRange
        /// Arrays and objects nested deeper than the configured limit.
        case tooDeep
    }

    public let reason: Reason
    public let offset: Int

    public init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String {
        let what: String
        switch reason {
        case .unexpectedEnd: what = "unexpected end of input"
        case .unexpectedByte: what = "unexpected character"
        case .trailingData: what = "unexpected data after the value"
        case .invalidUTF8: what = "invalid UTF-8 in string"
        case .controlCharacter: what = "unescaped control character in string"
        case .invalidEscape: what = "invalid escape in string"
        case .loneSurrogate: what = "unpaired UTF-16 surrogate escape"
        case .invalidNumber: what = "invalid number"
        case .numberOutOfRange: what = "number out of range"
        case .tooDeep: what = "nesting too deep"
        }
        return "\(what) at byte \(offset)"
    }
}

/// Limits shared by every JSON reader.
public enum JSONLimits {
    /// The nesting limit used when none is configured (config `max_depth`).
    public static let defaultMaxDepth = 128
}
