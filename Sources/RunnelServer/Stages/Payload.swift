/// One value flowing through subjects and stage chains, shared by every subscriber that sees it:
/// the exact bytes it was published with, or a value a stage computed, each turned into the
/// other at most once.
///
/// A published value starts as bytes. An expression that reads it only through paths (`.load`)
/// reads the bytes in place (`ExpressionInput.bytes`) and decodes nothing else; the first one
/// that needs it whole decodes it and the tree is kept, so the next subscriber's does not
/// decode again.
/// A computed value starts as a tree; the first write encodes it and the bytes are kept, so
/// every subscriber's `next` line writes the same buffer. Stages that never look at values
/// (`take`, `delay`, `merge`...) never decode.
///
/// Loop thread only: the caches are plain stored properties. The whole server runs on one libuv
/// loop thread (tests run a chain on one thread too), which is why this class can be
/// `@unchecked Sendable` without a lock.
public final class Payload: @unchecked Sendable {
    /// The bytes a published value arrived with; nil for a computed value. A `let`, never
    /// replaced, so the delivery path can read its bytes without a retain (`publishedBytes`).
    public let published: RawJSON?
    /// A computed value's encoding, once made.
    private var encodedCache: RawJSON?
    private var decodedCache: JSONValue?
    /// Outcomes of expressions that depend on the value alone, or on the value and `$subject`
    /// (`memoized`); made when the first is kept, so that a value no chain evaluates pays
    /// for one nil reference only.
    private var memos: PayloadMemos?

    /// A value kept as the exact bytes it arrived with.
    public init(raw: RawJSON) {
        published = raw
    }

    /// A value a stage computed; encoded when first written.
    public init(computed value: JSONValue) {
        published = nil
        decodedCache = value
    }

    /// The bytes: the published ones, or the computed value's compact encoding (made once).
    public var raw: RawJSON {
        if let published { return published }
        if let encodedCache { return encodedCache }
        let encoded = RawJSON(encoding: decodedCache ?? .null)
        encodedCache = encoded
        return encoded
    }

    /// The published bytes, for the delivery path: valid while this payload lives (the buffer is
    /// a `let`, never replaced). Reading them costs no retain and release of the buffer, which
    /// binding `published` around a call does.
    @inline(__always)
    var publishedBytes: UnsafeRawBufferPointer? { published?.buffer.bytes }

    /// The bytes if they are at hand (published, or encoded already).
    private var rawIfAny: RawJSON? { published ?? encodedCache }

    /// The tree: the computed value, or the bytes parsed once. Fails only for a number too large
    /// for a Double.
    public func decoded() throws(JSONError) -> JSONValue {
        if let decodedCache { return decodedCache }
        let value = try (published ?? .null).decoded()
        decodedCache = value
        return value
    }

    /// `expression`'s outcome on this value (published to `label`'s subject), computed once by
    /// `compute` when the expression depends on the value alone, or on the value and
    /// `$subject`, unless exactly one stage uses it (`CompiledExpression.outcomeIsShared`), else
    /// every time. An error `compute` throws (rather than returns) is not kept.
    func memoized(
        _ expression: CompiledExpression, label: SubjectLabel,
        _ compute: () throws(ProtocolError) -> Result<Payload, ExpressionError>
    ) throws(ProtocolError) -> Result<Payload, ExpressionError> {
        guard expression.outcomeIsShared else { return try compute() }
        if let memos, let outcome = memos.outcome(of: expression, label: label) { return outcome }
        let outcome = try compute()
        if let memos {
            memos.keep(outcome, of: expression, label: label)
        } else {
            let made = PayloadMemos()
            made.keep(outcome, of: expression, label: label)
            memos = made
        }
        return outcome
    }

    /// The tree of a payload made by `init(computed:)`, which has nothing to decode.
    var computedValue: JSONValue { decodedCache ?? .null }

    /// The tree's truthiness when the tree is at hand; nil when only the bytes are.
    var decodedTruthiness: Bool? { decodedCache?.isTruthy }

    /// Whether the tree is at hand (computed, or decoded already).
    var isDecoded: Bool { decodedCache != nil }

    /// Whether the bytes are at hand (published, or encoded already).
    var isEncoded: Bool { rawIfAny != nil }

    /// Whether both hold the same JSON value: the same bytes, else structurally equal trees
    /// (`1.0` equals `1`). A value that cannot be decoded equals only identical bytes.
    public func isEquivalent(to other: Payload) -> Bool {
        if self === other { return true }
        if let mine = rawIfAny, let theirs = other.rawIfAny, mine.hasSameBytes(as: theirs) { return true }
        guard let mine = try? decoded(), let theirs = try? other.decoded() else { return false }
        return mine == theirs
    }
}
