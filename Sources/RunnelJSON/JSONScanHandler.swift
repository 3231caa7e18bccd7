/// Receives the tokens of one JSON text, in order, from `JSONScanner`.
///
/// The scanner has already checked each token against RFC 8259 when the handler sees it, and
/// offsets are byte offsets into the scanned buffer. `depth` is the nesting of the container a
/// token sits in: 0 for the top-level value, 1 for the members of a top-level object, and so
/// on; a container's begin and end carry the depth of the container itself. Handlers are
/// generic parameters, so the optimiser specialises the scanner for each one and a handler
/// that ignores a token costs nothing.
package protocol JSONScanHandler {
    mutating func beginObject(at offset: Int, depth: Int)
    /// `end` is the offset just past the closing `}`.
    mutating func endObject(end: Int, depth: Int)
    mutating func beginArray(at offset: Int, depth: Int)
    /// `end` is the offset just past the closing `]`.
    mutating func endArray(end: Int, depth: Int)
    /// A member name; the member's value follows at the same depth.
    mutating func key(_ token: JSONStringToken, depth: Int)
    mutating func string(_ token: JSONStringToken, depth: Int)
    mutating func number(_ token: JSONNumberToken, depth: Int)
    mutating func literal(_ literal: JSONLiteral, range: Range<Int>, depth: Int)
}

/// A validated string token: `range` covers the quotes, `hasEscapes` says whether the content
/// holds any backslash escape (when it does not, the content bytes are the string's UTF-8).
package struct JSONStringToken {
    package var range: Range<Int>
    package var hasEscapes: Bool
    /// The bytes between the quotes.
    package var content: Range<Int> { (range.lowerBound + 1)..<(range.upperBound - 1) }
}

/// A validated number token; `isInteger` when it has neither fraction nor exponent.
package struct JSONNumberToken {
    package var range: Range<Int>
    package var isInteger: Bool
}

/// `true`, `false` or `null`.
package enum JSONLiteral {
    case `true`, `false`, null
}

/// A handler that ignores every token: scanning with it is pure validation.
struct JSONIgnoringHandler: JSONScanHandler {
    @inline(__always) mutating func beginObject(at offset: Int, depth: Int) {}
    @inline(__always) mutating func endObject(end: Int, depth: Int) {}
    @inline(__always) mutating func beginArray(at offset: Int, depth: Int) {}
    @inline(__always) mutating func endArray(end: Int, depth: Int) {}
    @inline(__always) mutating func key(_ token: JSONStringToken, depth: Int) {}
    @inline(__always) mutating func string(_ token: JSONStringToken, depth: Int) {}
    @inline(__always) mutating func number(_ token: JSONNumberToken, depth: Int) {}
    @inline(__always) mutating func literal(_ literal: JSONLiteral, range: Range<Int>, depth: Int) {}
}
