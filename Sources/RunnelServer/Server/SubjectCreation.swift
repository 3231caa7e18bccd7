import RunnelJSON
import RunnelProtocol

/// `create` as a value: the subject it asks for, read and checked on the loop that received
/// the request (`init(parsing:name:under:)`), and made by one rule on the subjects' own loop
/// (`apply`), whether the session lives there or on another loop (decision 0011).
///
/// Thread rules: a value; `apply` on the store's loop.
struct SubjectCreation: Sendable {
    /// What kind of subject, and its shape.
    enum Shape: Sendable {
        /// A plain, replay or behavior subject: a replay one's `capacity` and `retain_s`.
        case values(SubjectKind, capacity: Int?, retainMilliseconds: Int64?)
        /// A map: its `ttl_s` and `max_keys`.
        case map(ttlMilliseconds: Int64?, maxKeys: Int)
    }

    let name: String
    let shape: Shape
    /// A behavior subject's first value.
    let initial: RawJSON?
    let durable: Bool
    /// `slow_consumer` (an extension): the subject's own policy; nil when absent.
    let policy: SlowConsumerPolicy?

    /// The `create` of `name` that `request` asks for, its fields checked against `config`:
    /// `kind`; a replay subject's `capacity` (1 to `max_buffer_values`, else
    /// `default_replay_capacity`) and `retain_s`; a behavior's `value`; `durable` (not for a
    /// plain subject); a map's `ttl_s` and `max_keys` (1 to `max_map_keys`, its default),
    /// which takes no `capacity`, `value` nor `retain_s`.
    init(parsing request: Request, name: String, under config: ServerConfig) throws(ProtocolError) {
        self.name = name
        let kindName = try request.requiredString(.kind)
        guard let kind = SubjectKind(rawValue: kindName) else {
            throw ProtocolError(
                .badRequest, "field 'kind' must be one of subject, replay, behavior, map; got '\(kindName)'")
        }
        if kind == .map {
            for field in ["capacity", "value", "retain_s"] where request.scanned.field(named: field) != nil {
                throw ProtocolError(.badRequest, "field '\(field)' does not apply to kind 'map'")
            }
            durable = try request.bool(.durable) ?? false
            shape = .map(
                ttlMilliseconds: try Self.seconds(named: "ttl_s", of: request),
                maxKeys: try Self.maxKeys(of: request, under: config))
            initial = nil
            policy = try Self.policy(of: request)
        } else {
            var capacity: Int?
            if let given = try request.integer(.capacity) {
                guard kind == .replay else {
                    throw ProtocolError(.badRequest, "field 'capacity' applies only to kind 'replay'")
                }
                guard given >= 1 && given <= config.maxBufferValues else {
                    throw ProtocolError(
                        .badRequest, "field 'capacity' must be between 1 and \(config.maxBufferValues)")
                }
                capacity = given
            } else if kind == .replay {
                capacity = config.defaultReplayCapacity
            }
            initial = request.raw(.value)
            if initial != nil && kind != .behavior {
                throw ProtocolError(.badRequest, "field 'value' applies only to kind 'behavior'")
            }
            policy = try Self.policy(of: request)
            if request.scanned.field(named: "retain_s") != nil && kind != .replay {
                throw ProtocolError(.badRequest, "field 'retain_s' applies only to kind 'replay'")
            }
            let retain = try Self.seconds(named: "retain_s", of: request)
            durable = try request.bool(.durable) ?? false
            if durable && kind == .subject {
                throw ProtocolError(.badRequest, "field 'durable' applies only to kinds 'replay', 'behavior' and 'map'")
            }
            shape = .values(kind, capacity: capacity, retainMilliseconds: retain)
        }
    }

    /// Makes the subject in `context`'s store: an existing one of the same shape takes `policy`
    /// and is `done` at once, one of another shape is `kind_mismatch` naming its shape; a new
    /// one counts against `max_subjects`, a behavior's first value against the retained
    /// bytes, and a durable one needs a `data_dir` and a store that can write now. Returns
    /// whether the reply waits for `store.whenWritten` (a durable subject's, where replies wait
    /// for the disk).
    func apply(in context: SessionContext, under settings: SessionSettings) throws(ProtocolError) -> Bool {
        let store = context.subjects
        if durable && !store.keepsDurableSubjects {
            throw ProtocolError(.badRequest, "durable subjects need 'data_dir' in the server's configuration")
        }
        if let existing = store[name] {
            guard matches(existing) else {
                throw ProtocolError(.kindMismatch, "subject '\(name)' exists as \(existing.shape)")
            }
            if let policy { existing.label.slowConsumer = policy }
            return false
        }
        try context.checkSubjectLimit(under: settings)
        let entry: SubjectEntry
        switch shape {
        case .values(let kind, let capacity, let retainMilliseconds):
            if kind == .behavior { try store.retained.checkRoom(for: initial ?? .null, in: name) }
            if durable { try store.checkDurableWrites() }
            entry = store.create(
                name, kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, initial: initial,
                durable: durable)
        case .map(let ttlMilliseconds, let maxKeys):
            if durable { try store.checkDurableWrites() }
            entry = store.createMap(name, ttlMilliseconds: ttlMilliseconds, maxKeys: maxKeys, durable: durable)
        }
        entry.label.slowConsumer = policy
        return store.repliesWait(forChangeOf: entry)
    }

    /// Whether `existing` has the shape asked for.
    private func matches(_ existing: SubjectEntry) -> Bool {
        guard existing.isDurable == durable else { return false }
        switch shape {
        case .values(let kind, let capacity, let retainMilliseconds):
            return existing.kind == kind && existing.capacity == capacity
                && existing.retainMilliseconds == retainMilliseconds
        case .map(let ttlMilliseconds, let maxKeys):
            guard let map = existing.map else { return false }
            return map.ttlMilliseconds == ttlMilliseconds && map.maxKeys == maxKeys
        }
    }

    /// `retain_s` or `ttl_s` (version 1.3), in milliseconds; nil when absent.
    private static func seconds(named name: String, of request: Request) throws(ProtocolError) -> Int64? {
        guard let field = request.scanned.field(named: name) else { return nil }
        guard let seconds = request.scanned.number(field), let milliseconds = RetainAge.milliseconds(seconds: seconds)
        else {
            throw ProtocolError(.badRequest, "field '\(name)' must be \(RetainAge.requirement)")
        }
        return milliseconds
    }

    /// A map's `max_keys`: 1 to `max_map_keys`, which it is when absent.
    private static func maxKeys(of request: Request, under config: ServerConfig) throws(ProtocolError) -> Int {
        let limit = config.maxMapKeys
        guard let field = request.scanned.field(named: "max_keys") else { return limit }
        guard let number = request.scanned.number(field), let given = Int(exactly: number), (1...limit).contains(given)
        else {
            throw ProtocolError(.badRequest, "field 'max_keys' must be an integer from 1 to \(limit) (max_map_keys)")
        }
        return given
    }

    /// `slow_consumer`; nil when absent.
    private static func policy(of request: Request) throws(ProtocolError) -> SlowConsumerPolicy? {
        guard let field = request.scanned.field(named: "slow_consumer") else { return nil }
        guard let text = request.scanned.string(field), let policy = SlowConsumerPolicy(rawValue: text) else {
            throw ProtocolError(.badRequest, "field 'slow_consumer' must be \(SlowConsumerPolicy.namesForErrors)")
        }
        return policy
    }
}
