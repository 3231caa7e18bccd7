/// `[e, ...]`.
final class ExpressionArrayNode: ExpressionNode, @unchecked Sendable {
    let items: [ExpressionNode]

    init(_ items: [ExpressionNode]) { self.items = items }

    override func evaluate(_ input: JSONValue, _ bindings: ExpressionBindings) throws(ExpressionError) -> JSONValue {
        var values: [JSONValue] = []
        values.reserveCapacity(items.count)
        for item in items { values.append(try item.evaluate(input, bindings)) }
        return .array(values)
    }

    override var isFoldable: Bool { items.allSatisfy { $0.literalValue != nil } }
}

/// `{"k": e, ...}`: keys in written order; a repeated key keeps its first place and its last
/// value, as in jq.
final class ExpressionObjectNode: ExpressionNode, @unchecked Sendable {
    let members: [ExpressionObjectMember]

    init(_ members: [ExpressionObjectMember]) { self.members = members }

    override func evaluate(_ input: JSONValue, _ bindings: ExpressionBindings) throws(ExpressionError) -> JSONValue {
        var built: [(key: String, value: JSONValue)] = []
        built.reserveCapacity(members.count)
        for member in members {
            let value = try member.value.evaluate(input, bindings)
            if let earlier = built.firstIndex(where: { $0.key == member.key }) {
                built[earlier].value = value
            } else {
                built.append((member.key, value))
            }
        }
        return .object(JSONObject(built))
    }

    override var isFoldable: Bool { members.allSatisfy { $0.value.literalValue != nil } }
}
