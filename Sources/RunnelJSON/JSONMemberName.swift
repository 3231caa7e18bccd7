import RunnelBytes

/// A member name made once, when an expression is compiled (`.load`, `.["a b"]`), for looking
/// it up in any number of objects: the name and its UTF-8 at a stable address, so that a
/// lookup in a published value's bytes (`JSONValueBytes.lastMember(named:)`) compares bytes
/// it has at hand instead of getting them out of the `String` every time.
///
/// Immutable; any thread.
package final class JSONMemberName: Sendable {
    package let string: String
    /// The name's UTF-8, kept alive by this object.
    private let storage: ByteBuffer
    /// Whether the name is written in JSON without escapes (`JSONWriter.needsEscape` holds for
    /// none of its bytes): only such a name can equal a key written without them.
    let isPlain: Bool

    package init(_ string: String) {
        self.string = string
        storage = ByteBuffer(Array(string.utf8))
        isPlain = !string.utf8.contains(where: JSONWriter.needsEscape)
    }

    /// The name's UTF-8; valid while this object is alive.
    @inline(__always)
    var utf8: UnsafeRawBufferPointer { storage.bytes }
}
