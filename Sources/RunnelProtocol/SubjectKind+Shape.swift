import RunnelJSON

extension SubjectKind {
    /// `replay (capacity 5, durable)`: a subject of this kind as logs and errors name it.
    package func shape(capacity: Int?, durable: Bool) -> String {
        var details: [String] = []
        if let capacity { details.append("capacity \(capacity)") }
        if durable { details.append("durable") }
        return details.isEmpty ? rawValue : "\(rawValue) (\(details.joined(separator: ", ")))"
    }
}
