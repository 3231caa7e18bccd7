import RunnelBytes
import RunnelJSON
import RunnelProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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
/// A projection of a published value (`map .p`) is a slice of its bytes: it shares the
/// published buffer instead of copying the slice out, when the slice is at least half of it
/// (a small part of a large value is copied, so that it does not keep the large one's memory).
///
/// Loop thread only: the caches are plain stored properties. The whole server runs on one libuv
/// loop thread (tests run a chain on one thread too), which is why this class can be
/// `@unchecked Sendable` without a lock.
public final class Payload: @unchecked Sendable {
    /// The buffer holding the bytes the value arrived with: a published value's own, or the
    /// published value's a projection is a slice of (`bytesStart`, `bytesCount`). nil for a
    /// computed value. `let`s, never replaced, so the delivery path can read the bytes without
    /// a retain (`publishedBytes`).
    private let bytesBuffer: ByteBuffer?
    private let bytesStart: Int
    private let bytesCount: Int
    /// A computed value's encoding, once made.
    private var encodedCache: RawJSON?
    private var decodedCache: JSONValue?
    /// Outcomes of expressions that depend on the value alone, or on the value and `$subject`
    /// (`memoized`); made when the first is kept, so that a value no chain evaluates pays
    /// for one nil reference only.
    private var memos: PayloadMemos?
    /// Where the members of a published object sit: noted by the scan of the request that
    /// published it (`init(raw:members:)`), else by the first member lookup in it
    /// (`member(named:in:)`).
    private var memberIndex = JSONMemberIndex()
    /// When the value was published, by the server's clock in Unix milliseconds (version 1.3's
    /// `ts`), or when the one it was made from was; 0 when it has no such time (a stage's
    /// constant). Set once, by whoever made the payload: a published value's store, or the
    /// stage that made it from another (`Message(madeFrom:)`).
    package var publishedAt: Int64 = 0

    /// A value kept as the exact bytes it arrived with.
    @inline(__always)
    public convenience init(raw: RawJSON) { self.init(raw: raw, members: JSONMemberIndex()) }

    /// A value kept as the exact bytes it arrived with, with the index of its members that the
    /// scan that read it made (`EnvelopeScanner`): its first member lookup reads that instead
    /// of scanning the object. `members` describes exactly `raw`'s bytes, or is not built.
    @inline(__always)
    public init(raw: RawJSON, members: JSONMemberIndex, publishedAt: Int64 = 0) {
        bytesBuffer = raw.buffer
        bytesStart = 0
        bytesCount = raw.count
        memberIndex = members
        self.publishedAt = publishedAt
    }

    /// A value a stage computed; encoded when first written.
    public init(computed value: JSONValue) {
        bytesBuffer = nil
        bytesStart = 0
        bytesCount = 0
        decodedCache = value
    }

    /// The value at `range` of `source`'s published bytes, sharing its buffer.
    @inline(__always)
    package init(slice range: Range<Int>, of source: Payload) {
        assert(source.bytesBuffer != nil && range.upperBound <= source.bytesCount, "a slice of bytes the source has")
        bytesBuffer = source.bytesBuffer
        bytesStart = source.bytesStart + range.lowerBound
        bytesCount = range.count
        publishedAt = source.publishedAt
    }

    /// The value at `range` of `source`'s bytes (`publishedBytes`), a valid JSON value there:
    /// a slice sharing `source`'s buffer when it is at least half of it, else a copy.
    package static func projection(_ range: Range<Int>, of source: Payload) -> Payload {
        if source.sharesBytes(withPart: range.count) { return Payload(slice: range, of: source) }
        let bytes = UnsafeRawBufferPointer(rebasing: source.publishedBytes.unsafelyUnwrapped[range])
        return Payload(
            raw: RawJSON(validatedBuffer: ByteBuffer(copying: bytes)), members: JSONMemberIndex(),
            publishedAt: source.publishedAt)
    }

    /// Whether a part of `count` of its published bytes is kept as a part of them rather than
    /// copied out: when it is at least half of them.
    @inline(__always)
    package func sharesBytes(withPart count: Int) -> Bool { count &* 2 >= bytesCount }

    /// The bytes: the published ones, or the computed value's compact encoding (made once). A
    /// slice of a published value's bytes is copied out (once) to be a `RawJSON` of its own.
    public var raw: RawJSON {
        if let bytesBuffer, bytesCount == bytesBuffer.count { return RawJSON(validatedBuffer: bytesBuffer) }
        if let encodedCache { return encodedCache }
        let encoded =
            publishedBytes.map { RawJSON(validatedBuffer: ByteBuffer(copying: $0)) }
            ?? RawJSON(encoding: decodedCache ?? .null)
        encodedCache = encoded
        return encoded
    }

    /// The published bytes (a published value's, or the slice of them a projection is), for the
    /// delivery path: valid while this payload lives (the buffer is a `let`, never replaced).
    /// Reading them costs no retain and release of the buffer, which binding it does.
    @inline(__always)
    package var publishedBytes: UnsafeRawBufferPointer? {
        guard let base = bytesBuffer?.bytes.baseAddress else { return nil }
        return UnsafeRawBufferPointer(start: base + bytesStart, count: bytesCount)
    }

    /// The bytes if they are at hand (published, or encoded already); valid while this payload
    /// lives (neither buffer is replaced once set).
    private var bytesIfAny: UnsafeRawBufferPointer? { publishedBytes ?? encodedCache?.buffer.bytes }

    /// For `bytes`, the object that `publishedBytes` hold: the value of its last member named
    /// `name` and how many members it has (`JSONValueBytes.lastMember(named:)`). Unless the
    /// request's scan noted where the members sit, the first lookup scans the object and
    /// notes it; the others (this stage's next lookup, the next stage's, the next
    /// subscriber's) read that index when the object is small enough to have one.
    @inline(__always)
    package func member(named name: JSONMemberName, in bytes: JSONValueBytes) -> (
        value: JSONValueBytes?, memberCount: Int
    ) {
        assert(bytes.buffer.baseAddress == publishedBytes?.baseAddress, "a lookup in this payload's bytes")
        guard memberIndex.isBuilt else { return bytes.lastMember(named: name, noting: &memberIndex) }
        guard memberIndex.isAvailable else { return bytes.lastMember(named: name) }
        return bytes.lastMember(named: name, in: memberIndex)
    }

    /// `member(named:in:)` of `payload` when there is one, else a scan of `bytes`
    /// (`JSONValueBytes.lastMember(named:)`): the one rule by which expressions find a member
    /// of a value read as its bytes. Unretained: the caller keeps `payload` alive.
    @inline(__always)
    package static func member(named name: JSONMemberName, in bytes: JSONValueBytes, of payload: Unmanaged<Payload>?)
        -> (
            value: JSONValueBytes?, memberCount: Int
        )
    {
        guard let payload else { return bytes.lastMember(named: name) }
        return payload._withUnsafeGuaranteedRef { $0.member(named: name, in: bytes) }
    }

    /// Where the members of a published object sit, as far as noted yet (for a copy of the
    /// value another loop makes: `ReplicatedValue`).
    package var members: JSONMemberIndex { memberIndex }

    /// The tree: the computed value, or the bytes parsed once. Fails only for a number too large
    /// for a Double.
    public func decoded() throws(JSONError) -> JSONValue {
        if let decodedCache { return decodedCache }
        let value =
            try publishedBytes.map { bytes throws(JSONError) in try JSONParser(maxDepth: .max).parse(bytes) } ?? .null
        decodedCache = value
        return value
    }

    /// `expression`'s outcome on this value (published to `label`'s subject), computed once by
    /// `compute` when the expression depends on the value alone, or on the value and
    /// `$subject`, unless exactly one stage uses it (`CompiledExpression.outcomeIsShared`), else
    /// every time. An error `compute` throws (rather than returns) is not kept.
    package func memoized(
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
    package var computedValue: JSONValue { decodedCache ?? .null }

    /// The tree's truthiness when the tree is at hand; nil when only the bytes are.
    package var decodedTruthiness: Bool? { decodedCache?.isTruthy }

    /// Whether the tree is at hand (computed, or decoded already).
    package var isDecoded: Bool { decodedCache != nil }

    /// Whether it holds published bytes (its own, or a part of another value's).
    package var isPublished: Bool { bytesBuffer != nil }

    /// Whether the bytes are at hand (published, or encoded already).
    package var isEncoded: Bool { bytesBuffer != nil || encodedCache != nil }

    /// Whether both hold the same JSON value: the same bytes, else structurally equal trees
    /// (`1.0` equals `1`). A value that cannot be decoded equals only identical bytes.
    public func isEquivalent(to other: Payload) -> Bool {
        if self === other { return true }
        if let mine = bytesIfAny, let theirs = other.bytesIfAny,
            mine.count == theirs.count, memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0
        {
            return true
        }
        guard let mine = try? decoded(), let theirs = try? other.decoded() else { return false }
        return mine == theirs
    }
}
