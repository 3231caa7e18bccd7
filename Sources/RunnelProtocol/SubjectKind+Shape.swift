import RunnelJSON

extension SubjectKind {
    /// `replay (capacity 5, retain_s 60, durable)`: a subject of this kind as logs and errors
    /// name it.
    package func shape(capacity: Int?, retainMilliseconds: Int64? = nil, durable: Bool) -> String {
        var details: [String] = []
        if let capacity { details.append("capacity \(capacity)") }
        if let retainMilliseconds { details.append("retain_s \(RetainAge.text(milliseconds: retainMilliseconds))") }
        if durable { details.append("durable") }
        return details.isEmpty ? rawValue : "\(rawValue) (\(details.joined(separator: ", ")))"
    }
}
