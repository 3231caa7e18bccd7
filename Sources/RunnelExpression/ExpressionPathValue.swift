import RunnelJSON

/// What a path step (`.a`, `[e]`) reads: a decoded tree, or the bytes of a published value
/// read in place without decoding (`JSONValueBytes`). `ExpressionEvaluator.member` and
/// `index` are generic over it, so both forms follow the one copy of each rule.
package protocol ExpressionPathValue {
    var kind: JSONKind { get }
    /// For an object: the last member named `key` (nil when none) and how many members it
    /// has, a repeated key counted each time.
    func lastMember(named key: String) -> (value: Self?, memberCount: Int)
    /// `lastMember(named:)` for a name made when the expression was compiled (`.load`).
    func lastMember(named name: JSONMemberName) -> (value: Self?, memberCount: Int)
    /// For an array: how many items it has.
    var elementCount: Int { get }
    /// For an array: the item at `offset` (0 ≤ `offset` < `elementCount`).
    func element(at offset: Int) -> Self
}

extension JSONValue: ExpressionPathValue {
    package func lastMember(named key: String) -> (value: JSONValue?, memberCount: Int) {
        guard case .object(let object) = self else { preconditionFailure("lastMember of \(typeName)") }
        return (object[key], object.members.count)
    }

    package func lastMember(named name: JSONMemberName) -> (value: JSONValue?, memberCount: Int) {
        lastMember(named: name.string)
    }

    package var elementCount: Int {
        guard case .array(let items) = self else { preconditionFailure("elementCount of \(typeName)") }
        return items.count
    }

    package func element(at offset: Int) -> JSONValue {
        guard case .array(let items) = self else { preconditionFailure("element of \(typeName)") }
        return items[offset]
    }
}

extension JSONValueBytes: ExpressionPathValue {}
