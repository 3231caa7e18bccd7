import RunnelExpression
import RunnelJSON

/// The key a map subscription's first stage keeps it to, when that stage is exactly
/// `{"op":"filter","expr":"$key == \"K\""}` (or `"K" == $key`): the subscription then follows
/// that key through the map's `MapKeyRouter` instead of testing every change, and the stage
/// is not compiled (it would let through just what the router hands on).
///
/// Thread rules: pure functions.
enum MapKeyFilter {
    /// `K`, when `stages` begins with that filter within `limits`; nil otherwise (the stages
    /// are then compiled as they are, errors included).
    static func key(of stages: [JSONValue], limits: StageLimits) -> String? {
        guard case .object(let stage)? = stages.first, stage.count == 2, case .string("filter")? = stage["op"],
            case .string(let source)? = stage["expr"],
            let compiled = try? Expression.compile(
                source, variables: [], maxBytes: limits.maxExprBytes, budget: limits.evalBudget),
            let chain = compiled.root as? ExpressionChainNode, chain.steps.count == 1, chain.steps[0].op == .equal
        else { return nil }
        let (left, right) = (chain.first, chain.steps[0].operand)
        if (left as? ExpressionVariableNode)?.variable == .key, case .string(let key)? = right.literalValue {
            return key
        }
        if (right as? ExpressionVariableNode)?.variable == .key, case .string(let key)? = left.literalValue {
            return key
        }
        return nil
    }
}
