import RunnelJSON

/// `.name OP number` or `number OP .name` (`.load > 0.9`, `.count == 3`), the commonest
/// filter, recognised when the expression is compiled and tested on a published value's bytes
/// without walking the node tree: the member is looked up (through the payload's index of its
/// members), its bytes read as a number and compared, and the steps the tree would charge are
/// charged.
///
/// It answers only when the member is a number the budget can pay for; anything else (no such
/// member, a member of another type, an input that is not an object, a budget too small) is
/// left to the tree, which gives the value or the error that case has. So the tree stays the
/// one definition of the expression's meaning, and this is only a shorter way to the same
/// answer.
///
/// Immutable; any thread.
package final class ExpressionMemberComparison: Sendable {
    private let name: JSONMemberName
    /// The operator with the member on its left (`0.9 < .load` is kept as `.load > 0.9`).
    private let op: ExpressionBinaryOperator
    private let number: Double
    /// The steps the tree charges besides the member lookup's: the chain node, the path and
    /// its `.`, the literal, and the comparison of `==` and `!=`.
    private let fixedSteps: Int

    /// The comparison `root` is, when it is one.
    package init?(_ root: ExpressionNode) {
        guard let chain = root as? ExpressionChainNode, chain.steps.count == 1,
            let mirrored = chain.steps[0].op.mirrored
        else { return nil }
        let step = chain.steps[0]
        if let member = (chain.first as? ExpressionPathNode)?.onlyMemberOfInput,
            case .number(let literal)? = step.operand.literalValue
        {
            (name, op, number) = (member, step.op, literal)
        } else if let member = (step.operand as? ExpressionPathNode)?.onlyMemberOfInput,
            case .number(let literal)? = chain.first.literalValue
        {
            (name, op, number) = (member, mirrored, literal)
        } else {
            return nil
        }
        fixedSteps = op == .equal || op == .notEqual ? 5 : 4
    }

    /// The comparison's truth on `bytes` (a published value; `payload` holds them), charged to
    /// `meter`; nil when the tree is to answer, with nothing charged.
    @inline(__always)
    package func test(_ bytes: JSONValueBytes, of payload: Unmanaged<Payload>?, _ meter: inout ExpressionMeter) -> Bool?
    {
        guard bytes.kind == .object else { return nil }
        let (found, memberCount) = Payload.member(named: name, in: bytes, of: payload)
        guard let found, found.kind == .number, let value = JSONNumberDecoding.double(found.bytes),
            meter.stepsLeft >= fixedSteps &+ memberCount
        else { return nil }
        meter.takeSteps(fixedSteps &+ memberCount)
        return ExpressionEvaluator.compare(value, op, number)
    }
}
