/// The kinds of named subject, as `create` names them.
public enum SubjectKind: String, Sendable, CaseIterable {
    /// Delivers only what is published after subscribing (the library's `Subject`).
    case subject
    /// Replays its last `capacity` values, then its terminal event (`ReplaySubject`).
    case replay
    /// Delivers its current value first (`BehaviorSubject`).
    case behavior
}

extension SubjectKind {
    /// `replay (capacity 5, durable)`: a subject of this kind as logs and errors name it.
    func shape(capacity: Int?, durable: Bool) -> String {
        var details: [String] = []
        if let capacity { details.append("capacity \(capacity)") }
        if durable { details.append("durable") }
        return details.isEmpty ? rawValue : "\(rawValue) (\(details.joined(separator: ", ")))"
    }
}
