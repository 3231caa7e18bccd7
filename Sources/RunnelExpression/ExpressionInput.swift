import RunnelJSON

/// The value an expression is evaluated on (`.`): a decoded tree, or the bytes of a published
/// value, which path nodes read in place (`JSONValueBytes`): `.load` scans to the member it
/// needs and decodes only that, so a value is never decoded whole for an expression that reads
/// a few of its members. `.` on its own, and so whatever needs the whole value (`keys(.)`,
/// `. == {...}`), decodes the bytes (`tree`).
///
/// Lives on the stack for one evaluation; the bytes belong to a `Payload` or `RawJSON` the
/// caller keeps alive around it. With a `Payload`'s bytes comes the payload, unretained: a
/// member step from `.` looks up through it (`Payload.member(named:in:)`), which keeps an
/// index of the members.
package enum ExpressionInput {
    case tree(JSONValue)
    case bytes(JSONValueBytes, of: Unmanaged<Payload>?)

    /// The value as a tree: decoded from the bytes if need be (an `eval` error at `position`
    /// for a number too large for a Double).
    @inline(__always)
    package func tree(at position: Int) throws(ExpressionError) -> JSONValue {
        switch self {
        case .tree(let value): return value
        case .bytes(let bytes, _): return try ExpressionInput.decoded(bytes, at: position)
        }
    }

    /// `bytes` decoded, or the `eval` error a value that cannot be decoded gives.
    package static func decoded(_ bytes: JSONValueBytes, at position: Int) throws(ExpressionError) -> JSONValue {
        do {
            return try bytes.decoded()
        } catch {
            throw .eval("cannot decode the value: \(error)", at: position)
        }
    }
}
