import RunnelBytes
import RunnelExpression
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// What flows through a named subject and its subscribers' chains: a value and the subject it
/// was published to. The value keeps the exact bytes the client sent until a stage computes a
/// new one; its `Payload` is shared by every subscriber, so it is decoded and encoded at most
/// once (loop thread only, like the payload).
///
/// A small projection of a published value (`map .p`) that is most of its bytes is carried as
/// that part of the same payload (`part`), not as a payload of its own: making and freeing one
/// cost a delivery more than the rest of the projection did (`init(madeFrom:projecting:)`).
public struct Message: Sendable {
    public let label: SubjectLabel
    /// The payload that is the value, or whose published bytes the value is a part of.
    let source: Payload
    /// The seq's value; meaningful when `place` says there is one.
    private let seqValue: UInt64
    /// Where in `source`'s published bytes the value is (`part`), and whether it has a seq,
    /// in one word: a message is then four words, which Swift passes in registers. With the
    /// seq's optional flag in a fifth, every stage and delivery passed messages through memory.
    private let place: UInt64
    private static let hasSeq: UInt64 = 1 << 63

    /// Where in `source`'s published bytes the value is; `Part.whole` when it is `source`.
    var part: Part { Part(bits: place & ~Self.hasSeq) }

    /// The seq, in `label`'s subject, of the newest value of that subject this one was made
    /// from (the value itself, when no stage changed it); nil for a value made from none, such
    /// as `startWith`'s.
    public var seq: UInt64? { place & Self.hasSeq != 0 ? seqValue : nil }

    /// A range of a payload's published bytes in 63 bits: the start in the low 32, the count
    /// in the 31 above (all ones: the whole payload).
    struct Part: Sendable {
        fileprivate let bits: UInt64

        private static let wholeCount = 0x7FFF_FFFF

        /// All of the payload.
        static let whole = Part(bits: UInt64(wholeCount) << 32)

        /// All of the payload, marked as `mark` (the start of a whole part is otherwise 0).
        fileprivate init(marking mark: Mark) { bits = Self.whole.bits | UInt64(mark.rawValue) }

        /// The mark a whole part carries.
        fileprivate var mark: Mark? { isWhole ? Mark(rawValue: bits & 0xFFFF_FFFF) : nil }

        var start: Int { Int(truncatingIfNeeded: bits & 0xFFFF_FFFF) }
        var count: Int { Int(truncatingIfNeeded: bits >> 32) }
        var isWhole: Bool { count == Self.wholeCount }
        var range: Range<Int> { start..<(start &+ count) }

        fileprivate init(bits: UInt64) { self.bits = bits }

        /// `range`, when it fits (starts within 4 GiB, under 2 GiB long); nil otherwise.
        init?(_ range: Range<Int>) {
            guard let start = UInt32(exactly: range.lowerBound), range.count < Self.wholeCount else { return nil }
            self.init(bits: UInt64(start) | UInt64(range.count) << 32)
        }
    }

    /// What a message is besides a value, on a map's way: a key's removal (its label is the
    /// key's, its payload `null` stamped with the removal's time), or the end of a map
    /// subscription's snapshot (`synced`). Marks pass round a subscription's stages and are
    /// written as their events (`Session+MapDelivery`). Carried in the part's start, which is
    /// 0 for every whole value: a message stays four words.
    enum Mark: UInt64 {
        case deleted = 1
        case expired = 2
        case synced = 3

        /// The reason a removal's event gives.
        var reason: StaticString { self == .expired ? "expired" : "deleted" }
    }

    /// The mark, for a removal or `synced`; nil for a value.
    var mark: Mark? { part.start == 0 ? nil : part.mark }

    /// A mark: `label`'s key removed (seq and time its removal's), or `synced` (seq: the map's
    /// latest).
    init(mark: Mark, label: SubjectLabel, seq: UInt64?, time: Int64) {
        let payload = Payload(raw: .null)
        payload.publishedAt = time
        self.init(label: label, source: payload, part: Part(marking: mark), seq: seq)
    }

    public init(label: SubjectLabel, value: Payload, seq: UInt64? = nil) {
        self.init(label: label, source: value, part: .whole, seq: seq)
    }

    private init(label: SubjectLabel, source: Payload, part: Part, seq: UInt64?) {
        self.label = label
        self.source = source
        seqValue = seq ?? 0
        place = part.bits | (seq == nil ? 0 : Self.hasSeq)
    }

    /// A published value, kept as its exact bytes. Inlined into the publish path, where a call
    /// cost more than what it does.
    @inline(__always)
    public init(label: SubjectLabel, raw: RawJSON, seq: UInt64? = nil) {
        self.init(label: label, value: Payload(raw: raw), seq: seq)
    }

    /// A published value with the index of its members its scan made (`Payload(raw:members:)`),
    /// published at `time` (Unix ms, `PublishClock`).
    @inline(__always)
    init(label: SubjectLabel, raw: RawJSON, members: JSONMemberIndex, seq: UInt64?, time: Int64) {
        self.init(label: label, value: Payload(raw: raw, members: members, publishedAt: time), seq: seq)
    }

    /// A value a stage computed; from values the newest of which was published at `time`.
    public init(label: SubjectLabel, computed: JSONValue, seq: UInt64? = nil, time: Int64 = 0) {
        let value = Payload(computed: computed)
        value.publishedAt = time
        self.init(label: label, value: value, seq: seq)
    }

    /// A value a stage made from `source` alone: it keeps `source`'s subject, position and
    /// time. `value` is the stage's own for `source` (made for it, or the outcome its payload
    /// keeps for it), so it takes `source`'s time when it has none; a constant the stage gives
    /// every value is `init(madeFrom:constant:)`'s.
    public init(madeFrom source: Message, value: Payload) {
        if value.publishedAt == 0 { value.publishedAt = source.time }
        self.init(label: source.label, value: value, seq: source.seq)
    }

    /// A constant a stage gives in place of `source` (`mapReplace`): `source`'s subject and
    /// position, and no time (the payload is every value's).
    init(madeFrom source: Message, constant: Payload) {
        self.init(label: source.label, value: constant, seq: source.seq)
    }

    /// A value a stage computed from `source` alone: it keeps `source`'s subject, position and
    /// time.
    public init(madeFrom source: Message, computed: JSONValue) {
        self.init(label: source.label, computed: computed, seq: source.seq, time: source.time)
    }

    /// The value at `range` of `source`'s published bytes (`publishedBytes`), a valid JSON
    /// value there, keeping `source`'s subject and position. A part of `source`'s payload when
    /// the payload shares it (most of its bytes: `Payload.sharesBytes`) and it is no larger
    /// than a delivery copies into its output (`ByteBuffer.copyThreshold`); else a payload of
    /// its own (`Payload.projection`), whose bytes a larger value's deliveries share.
    @inline(__always)
    init(madeFrom source: Message, projecting range: Range<Int>) {
        let offset = source.part.isWhole ? 0 : source.part.start
        let inSource = (range.lowerBound &+ offset)..<(range.upperBound &+ offset)
        guard range.count <= ByteBuffer.copyThreshold, source.source.sharesBytes(withPart: inSource.count),
            let part = Part(inSource)
        else {
            self.init(madeFrom: source, value: Payload.projection(range, of: source.value))
            return
        }
        self.init(label: source.label, source: source.source, part: part, seq: source.seq)
    }

    /// The value. A part of a payload is made a payload of its own each time it is asked for
    /// (what looks at a value whole does: decoding, `raw`, comparing); the delivery path and
    /// stage expressions read `publishedBytes` instead.
    public var value: Payload { part.isWhole ? source : Payload(slice: part.range, of: source) }

    /// The value's published bytes: the payload's, or the part of them the value is; nil for
    /// a computed value. Valid while this message's payload lives.
    @inline(__always)
    var publishedBytes: UnsafeRawBufferPointer? {
        guard let bytes = source.publishedBytes else { return nil }
        // A hint, so that a whole value's delivery is not made to compute the part's bounds.
        if _fastPath(part.isWhole) { return bytes }
        return UnsafeRawBufferPointer(rebasing: bytes[part.range])
    }

    /// When the value was published (or the newest it was made from), in Unix milliseconds by
    /// the server's clock; 0 when it has no such time.
    var time: Int64 { source.publishedAt }

    /// The value's position in its subject, when it has one.
    var position: Position? {
        guard let epoch = label.epoch, let seq else { return nil }
        return Position(epoch: epoch, seq: seq)
    }
}

/// Equality of the values only, as `distinctUntilChanged` and `ignore` compare them: the
/// subjects the values came from are not compared.
extension Message: Equatable {
    public static func == (lhs: Message, rhs: Message) -> Bool { lhs.value.isEquivalent(to: rhs.value) }
}
