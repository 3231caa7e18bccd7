/// A subject the config asks the server to create at start-up (a `[[subjects]]` table).
///
/// Immutable value; `name` has passed `SubjectName.problem(withName:)`.
public struct SubjectDefinition: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    public let kind: SubjectKind
    /// The replay buffer size; set only for `.replay` (the file's value or
    /// `default_replay_capacity`).
    public let capacity: Int?
    /// A behavior's initial value as JSON text (`null` when the file gives none); `nil` for
    /// the other kinds.
    public let initialValueJSON: String?
    /// Kept in `data_dir` across restarts (replay and behavior only).
    public let durable: Bool

    public init(
        name: String, kind: SubjectKind, capacity: Int? = nil, initialValueJSON: String? = nil, durable: Bool = false
    ) {
        self.durable = durable
        self.name = name
        self.kind = kind
        self.capacity = capacity
        self.initialValueJSON = initialValueJSON
    }

    /// `name (kind, capacity N | value V)`, for logs and config summaries.
    public var description: String {
        switch kind {
        case .subject: return "\(name) (subject)"
        case .replay: return "\(name) (replay, capacity \(capacity ?? 0)\(durable ? ", durable" : ""))"
        case .behavior: return "\(name) (behavior, value \(initialValueJSON ?? "null")\(durable ? ", durable" : ""))"
        }
    }
}
