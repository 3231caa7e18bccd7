import RunnelJSON
import RunnelProtocol

/// A subject the config asks the server to create at start-up (a `[[subjects]]` table).
///
/// Immutable value; `name` has passed `SubjectName.problem(withName:)`.
public struct SubjectDefinition: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    public let kind: SubjectKind
    /// The replay buffer size; set only for `.replay` (the file's value or
    /// `default_replay_capacity`).
    public let capacity: Int?
    /// A replay's `retain_s` or a map's `ttl_s`, in milliseconds (`RetainAge`).
    public let retainMilliseconds: Int64?
    /// A map's `max_keys` (the file's value or `max_map_keys`); nil for the other kinds.
    public let maxKeys: Int?
    /// A behavior's initial value as JSON text (`null` when the file gives none); `nil` for
    /// the other kinds.
    public let initialValueJSON: String?
    /// Kept in `data_dir` across restarts (not a plain subject).
    public let durable: Bool
    /// The subject's own slow-consumer policy (`slow_consumer`); nil: the global one. Unlike
    /// the rest, a reload applies a new one to the existing subject.
    public let slowConsumer: SlowConsumerPolicy?

    public init(
        name: String, kind: SubjectKind, capacity: Int? = nil, retainMilliseconds: Int64? = nil, maxKeys: Int? = nil,
        initialValueJSON: String? = nil, durable: Bool = false, slowConsumer: SlowConsumerPolicy? = nil
    ) {
        self.retainMilliseconds = retainMilliseconds
        self.maxKeys = maxKeys
        self.durable = durable
        self.slowConsumer = slowConsumer
        self.name = name
        self.kind = kind
        self.capacity = capacity
        self.initialValueJSON = initialValueJSON
    }

    /// `name (kind, capacity N[, retain_s S] | value V | [ttl_s T, ]max_keys K[, durable][,
    /// slow_consumer P])`, for logs and config summaries.
    public var description: String {
        let policy = slowConsumer.map { ", slow_consumer \($0.rawValue)" } ?? ""
        switch kind {
        case .subject: return "\(name) (subject\(policy))"
        case .replay:
            let retain = retainMilliseconds.map { ", retain_s \(RetainAge.text(milliseconds: $0))" }
            return "\(name) (replay, capacity \(capacity ?? 0)\(retain ?? "")\(durable ? ", durable" : "")\(policy))"
        case .behavior:
            return "\(name) (behavior, value \(initialValueJSON ?? "null")\(durable ? ", durable" : "")\(policy))"
        case .map:
            let ttl = retainMilliseconds.map { "ttl_s \(RetainAge.text(milliseconds: $0)), " } ?? ""
            return "\(name) (map, \(ttl)max_keys \(maxKeys ?? 0)\(durable ? ", durable" : "")\(policy))"
        }
    }

    /// Whether `other` declares the same subject but for its slow-consumer policy: what a
    /// reload can apply to the existing subject.
    func differsOnlyInSlowConsumer(from other: SubjectDefinition) -> Bool {
        name == other.name && kind == other.kind && capacity == other.capacity
            && retainMilliseconds == other.retainMilliseconds && maxKeys == other.maxKeys
            && initialValueJSON == other.initialValueJSON && durable == other.durable
            && slowConsumer != other.slowConsumer
    }

    /// The capacity a subject made from this entry has: a replay's own or the default.
    func effectiveCapacity(defaultReplayCapacity: Int) -> Int? {
        kind == .replay ? (capacity ?? defaultReplayCapacity) : nil
    }

    /// Why this entry cannot stand for the existing subject of its name, of `kind`, `capacity`,
    /// `retainMilliseconds`, `maxKeys` and durability; nil when it can. Where either side is
    /// durable they must agree in all five: the configuration never reshapes a subject kept in
    /// `data_dir`.
    package func conflict(
        withExisting kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64?, maxKeys: Int?, durable: Bool,
        defaultReplayCapacity: Int
    ) -> SubjectConflict? {
        guard durable || self.durable else { return nil }
        let agrees =
            kind == self.kind && capacity == effectiveCapacity(defaultReplayCapacity: defaultReplayCapacity)
            && retainMilliseconds == self.retainMilliseconds && maxKeys == self.maxKeys && durable == self.durable
        if agrees { return nil }
        return SubjectConflict(
            "[[subjects]] \"\(name)\" is \(self), but the subject kept in data_dir is "
                + kind.shape(
                    capacity: capacity, retainMilliseconds: retainMilliseconds, maxKeys: maxKeys, durable: durable))
    }
}

/// A `[[subjects]]` entry that disagrees with the durable subject of that name.
package struct SubjectConflict: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
