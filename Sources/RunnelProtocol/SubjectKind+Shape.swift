import RunnelJSON

extension SubjectKind {
    /// `replay (capacity 5, retain_s 60, durable)`, `map (ttl_s 30, max_keys 100)`: a subject of
    /// this kind as logs and errors name it (a map's `retainMilliseconds` is its `ttl_s`).
    package func shape(capacity: Int?, retainMilliseconds: Int64? = nil, maxKeys: Int? = nil, durable: Bool)
        -> String
    {
        var details: [String] = []
        if let capacity { details.append("capacity \(capacity)") }
        if let retainMilliseconds {
            details.append("\(self == .map ? "ttl_s" : "retain_s") \(RetainAge.text(milliseconds: retainMilliseconds))")
        }
        if let maxKeys { details.append("max_keys \(maxKeys)") }
        if durable { details.append("durable") }
        return details.isEmpty ? rawValue : "\(rawValue) (\(details.joined(separator: ", ")))"
    }
}
