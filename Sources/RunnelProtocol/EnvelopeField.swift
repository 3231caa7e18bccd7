/// The JSON type of a value, as seen by the scanner.
public enum JSONValueKind: Sendable, Equatable {
    case null, bool, number, string, array, object
}

/// Where one top-level member's value sits in a scanned request line.
///
/// `range` covers the value's exact bytes (a string's quotes included, no surrounding
/// whitespace). Read it through `ScannedEnvelope`, which holds the line.
public struct EnvelopeField: Sendable, Equatable {
    public let kind: JSONValueKind
    /// For a string: whether its content holds backslash escapes. For a number: whether it
    /// has neither fraction nor exponent.
    package let flag: Bool
    // 32-bit offsets keep the scanner's result small (it is copied once per request); the
    // scanner refuses lines of 4 GiB or more.
    private let start: UInt32
    private let end: UInt32

    package init(kind: JSONValueKind, range: Range<Int>, flag: Bool = false) {
        self.kind = kind
        self.flag = flag
        start = UInt32(truncatingIfNeeded: range.lowerBound)
        end = UInt32(truncatingIfNeeded: range.upperBound)
    }

    /// The value's bytes in the line.
    public var range: Range<Int> { Int(start)..<Int(end) }

    /// A scalar: null, boolean, number or string (what `ref` may hold).
    public var isScalar: Bool { kind != .array && kind != .object }
}
