/// A subject the config asks the server to create at start-up (a `[[subjects]]` table).
///
/// Immutable value; `name` has passed `SubjectName.problem(withName:)`.
public struct SubjectDefinition: Sendable, Equatable, CustomStringConvertible {
    /// The protocol's subject kinds, as `create` names them.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// Delivers only what is published after subscribing.
        case subject
        /// First delivers its last `capacity` values.
        case replay
        /// First delivers its current value.
        case behavior
    }

    public let name: String
    public let kind: Kind
    /// The replay buffer size; set only for `.replay` (the file's value or
    /// `default_replay_capacity`).
    public let capacity: Int?
    /// A behavior's initial value as JSON text (`null` when the file gives none); `nil` for
    /// the other kinds.
    public let initialValueJSON: String?

    public init(name: String, kind: Kind, capacity: Int? = nil, initialValueJSON: String? = nil) {
        self.name = name
        self.kind = kind
        self.capacity = capacity
        self.initialValueJSON = initialValueJSON
    }

    /// `name (kind, capacity N | value V)`, for logs and config summaries.
    public var description: String {
        switch kind {
        case .subject: return "\(name) (subject)"
        case .replay: return "\(name) (replay, capacity \(capacity ?? 0))"
        case .behavior: return "\(name) (behavior, value \(initialValueJSON ?? "null"))"
        }
    }
}
