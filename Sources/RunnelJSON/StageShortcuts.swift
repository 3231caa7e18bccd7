/// The shortcuts for the commonest stages, shared by `runnel sub`'s options and the query of
/// `GET /events`: each one given becomes a stage, always in the order filter, map, throttle,
/// take, and any further stages come after them. Here, beside the JSON they build, so that the
/// server and the clients share the rule without a client linking the server.
///
/// Thread rules: pure, any thread. Lifetime rule: none.
public enum StageShortcuts {
    /// The stages for the shortcuts given: `filter` and `map` expressions, `throttle` seconds,
    /// `take` a count.
    public static func stages(filter: String?, map: String?, throttle: Double?, take: Int?) -> [JSONValue] {
        var stages: [JSONValue] = []
        func stage(_ op: String, _ key: String, _ value: JSONValue) {
            stages.append(.object(JSONObject([("op", .string(op)), (key, value)])))
        }
        if let filter { stage("filter", "expr", .string(filter)) }
        if let map { stage("map", "expr", .string(map)) }
        if let throttle { stage("throttle", "seconds", .number(throttle)) }
        if let take { stage("take", "count", .number(Double(take))) }
        return stages
    }
}
