/// Where the members of a small object sit in its bytes, noted by the first lookup of a member
/// (`JSONValueBytes.lastMember(named:noting:)`), so that the next lookups in the same value
/// (a filter's `.load`, then a map's `.p`, then the next subscriber's chain) look at a few
/// offsets instead of scanning the object again (`lastMember(named:in:)`).
///
/// For each member, in order: the offset of its key's first byte after the opening quote, and
/// of its value's first byte, relative to the object's first byte. Only an object of at most
/// `capacity` members whose keys have no escapes, with every value starting within its first
/// 64 KiB, is indexed (so a key ends at its first quote); any other is `unavailable`, and
/// lookups scan it as before. Four words and a byte, kept by the `Payload` whose bytes it
/// describes: every publish makes one, so the index is small and costs nothing until a lookup
/// (four stores). Any thread.
struct JSONMemberIndex: Sendable {
    /// The most members an index notes.
    static let capacity = 8

    /// A member every four bytes: its key offset (low 16 bits) and value offset (high 16 bits).
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    /// How many members are noted, or one of the states below.
    private var state = JSONMemberIndex.notBuilt

    private static let notBuilt: UInt8 = .max
    private static let unavailable: UInt8 = .max - 1

    /// Whether a lookup has scanned the object: the index is then complete, or unavailable.
    var isBuilt: Bool { state != Self.notBuilt }

    /// Whether every member of the object is noted.
    var isAvailable: Bool { state <= Self.capacity }

    /// How many members the object has (when `isAvailable`).
    var count: Int { Int(state) }

    /// The key and value offsets of member `position` (0 ≤ `position` < `count`).
    @inline(__always)
    func member(_ position: Int) -> (key: Int, value: Int) {
        let packed = withUnsafeBytes(of: words) { $0.load(fromByteOffset: position &* 4, as: UInt32.self) }
        return (Int(truncatingIfNeeded: packed & 0xFFFF), Int(truncatingIfNeeded: packed >> 16))
    }
}

/// What `JSONValueBytes.lastMember` tells about each member it passes, in order (a generic
/// parameter: the lookup that notes nothing costs nothing more).
protocol JSONMemberRecorder {
    /// The scan starts, at an object's first byte.
    mutating func begin()
    /// A member: its key's content and its value start at these offsets from the object's
    /// first byte; `escaped` when the key holds an escape.
    mutating func note(key: Int, value: Int, escaped: Bool)
}

/// Notes nothing.
struct JSONMemberIgnorer: JSONMemberRecorder {
    @inline(__always) mutating func begin() {}
    @inline(__always) mutating func note(key: Int, value: Int, escaped: Bool) {}
}

extension JSONMemberIndex: JSONMemberRecorder {
    @inline(__always)
    mutating func begin() { state = 0 }

    /// Notes the next member; one past `capacity`, with a key that has escapes, or with its
    /// value past 64 KiB makes the index unavailable.
    @inline(__always)
    mutating func note(key: Int, value: Int, escaped: Bool) {
        guard isAvailable else { return }
        guard state < Self.capacity, !escaped, value <= Int(UInt16.max) else {
            state = Self.unavailable
            return
        }
        let packed = UInt32(truncatingIfNeeded: key) | UInt32(truncatingIfNeeded: value) << 16
        let offset = Int(state) &* 4
        withUnsafeMutableBytes(of: &words) { $0.storeBytes(of: packed, toByteOffset: offset, as: UInt32.self) }
        state &+= 1
    }
}
