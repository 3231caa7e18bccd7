import RunnelJSON

/// `[e, ...]`.
package final class ExpressionArrayNode: ExpressionNode, @unchecked Sendable {
    package let items: [ExpressionNode]

    package init(_ items: [ExpressionNode]) { self.items = items }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        try meter.items(items.count, at: 0)
        var values: [JSONValue] = []
        values.reserveCapacity(items.count)
        for item in items { values.append(try item.evaluate(input, bindings, &meter)) }
        return .array(values)
    }

    package override var isFoldable: Bool { items.allSatisfy { $0.literalValue != nil } }
}

/// `{"k": e, ...}`: keys in written order; a repeated key keeps its first place and its last
/// value, as in jq.
package final class ExpressionObjectNode: ExpressionNode, @unchecked Sendable {
    package let members: [ExpressionObjectMember]

    /// The distinct keys, in first-written order.
    package let keys: [String]
    /// For each member, the index of its key in `keys`.
    package let slots: [Int]

    package init(_ members: [ExpressionObjectMember]) {
        self.members = members
        var keys: [String] = []
        var slotByKey: [String: Int] = [:]
        var slots: [Int] = []
        for member in members {
            if let slot = slotByKey[member.key] {
                slots.append(slot)
            } else {
                slotByKey[member.key] = keys.count
                slots.append(keys.count)
                keys.append(member.key)
            }
        }
        self.keys = keys
        self.slots = slots
    }

    package override func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try meter.step(at: 0)
        try meter.items(keys.count, at: 0)
        var built: [(key: String, value: JSONValue)] = []
        built.reserveCapacity(keys.count)
        for index in members.indices {
            let member = members[index]
            let value = try member.value.evaluate(input, bindings, &meter)
            let slot = slots[index]
            if slot == built.count {
                built.append((member.key, value))
            } else {
                built[slot].value = value
            }
        }
        return .object(JSONObject(built))
    }

    package override var isFoldable: Bool { members.allSatisfy { $0.value.literalValue != nil } }
}
