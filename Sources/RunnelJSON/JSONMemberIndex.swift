/// Where the keys of a small object's members sit in its bytes, so that member lookups in it
/// (a filter's `.load`, then a map's `.p`, then the next subscriber's chain) compare a few keys
/// where they are instead of scanning the object (`JSONValueBytes.lastMember(named:in:)`).
/// The scan that reads a request notes it for a published object (`EnvelopeScanner`), and the
/// first lookup does for any other (`lastMember(named:noting:)`).
///
/// For each member, in order: the offset of its key's first byte after the opening quote,
/// relative to the object's first byte. A lookup finds the rest from there: a key without
/// escapes ends at its first quote, its value starts after the colon that follows, and ends
/// before the next member's comma or the object's closing brace. Only an object of at most
/// `capacity` members whose keys have no escapes and start within its first 64 KiB is indexed;
/// any other is `unavailable`, and lookups scan it. Four words and a byte, kept by the
/// `Payload` whose bytes it describes. Any thread.
public struct JSONMemberIndex: Sendable {
    /// The most members an index notes.
    static let capacity = 16

    /// A key offset every two bytes.
    private var keys: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    /// How many members are noted, or one of the states below.
    private var state = JSONMemberIndex.notBuilt

    private static let notBuilt: UInt8 = .max
    private static let unavailable: UInt8 = .max - 1

    /// An index not built yet.
    package init() {}

    /// Whether the object has been scanned: the index is then complete, or unavailable.
    package var isBuilt: Bool { state != Self.notBuilt }

    /// Whether every member of the object is noted.
    package var isAvailable: Bool { state <= Self.capacity }

    /// How many members the object has (when `isAvailable`).
    var count: Int { Int(state) }

    /// The offset of member `position`'s key (0 ≤ `position` < `count`).
    @inline(__always)
    func key(_ position: Int) -> Int {
        Int(withUnsafeBytes(of: keys) { $0.load(fromByteOffset: position &* 2, as: UInt16.self) })
    }
}

/// What `JSONValueBytes.lastMember` tells about each member it passes, in order (a generic
/// parameter: the lookup that notes nothing costs nothing more).
protocol JSONMemberRecorder {
    /// The scan starts, at an object's first byte.
    mutating func begin()
    /// A member: its key's content starts at this offset from the object's first byte;
    /// `escaped` when the key holds an escape.
    mutating func note(key: Int, escaped: Bool)
}

/// Notes nothing.
struct JSONMemberIgnorer: JSONMemberRecorder {
    @inline(__always) mutating func begin() {}
    @inline(__always) mutating func note(key: Int, escaped: Bool) {}
}

extension JSONMemberIndex: JSONMemberRecorder {
    @inline(__always)
    package mutating func begin() { state = 0 }

    /// Notes the next member; one past `capacity`, with a key that has escapes, or with its
    /// key past 64 KiB makes the index unavailable.
    @inline(__always)
    package mutating func note(key: Int, escaped: Bool) {
        guard state < Self.capacity, !escaped, key <= Int(UInt16.max) else {
            if isAvailable { state = Self.unavailable }
            return
        }
        let offset = Int(state) &* 2
        withUnsafeMutableBytes(of: &keys) {
            $0.storeBytes(of: UInt16(truncatingIfNeeded: key), toByteOffset: offset, as: UInt16.self)
        }
        state &+= 1
    }
}
