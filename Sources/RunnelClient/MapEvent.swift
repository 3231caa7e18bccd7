/// What a `MapSubscription` yields: the changes of its table, each once the table has changed (a
/// write, a removal), `synced` each time the table is complete and current, and gaps.
///
/// Thread rules: immutable values, `Sendable`. Lifetime rule: none (values).
public enum MapEvent: Sendable {
    /// A key written: `Value.key` is the key, `Value.value` its new value.
    case value(Value)
    case removed(Removed)
    /// The table is complete and current: after its snapshot, and again after each
    /// resubscription once the changes it missed (or a new snapshot's differences) have come.
    case synced
    case gap(Gap)
}

/// A key gone from a map subscription's table (version 1.3).
///
/// Thread rules: immutable, `Sendable`. Lifetime rule: none (a value).
public struct Removed: Sendable, Equatable {
    /// Why it went: the server's reason, or the client's `notResumed`.
    ///
    /// Thread rules: a value, `Sendable`. Lifetime rule: none (a value).
    public struct Reason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) { self.rawValue = rawValue }

        /// Removed by a `deleteKey` (a `pub` with `delete`).
        public static let deleted = Reason(rawValue: "deleted")
        /// Not written for the map's `ttl_s`.
        public static let expired = Reason(rawValue: "expired")
        /// Absent from the snapshot the table was rebuilt from after a resubscription that could
        /// not resume: removed meanwhile, how is not known.
        public static let notResumed = Reason(rawValue: "not_resumed")

        public var description: String { rawValue }
    }

    public let key: String
    public let reason: Reason
    /// The map subject.
    public let subject: String
    /// The removal's position, `EPOCH:SEQ`; nil for `notResumed`.
    public let position: String?
    /// When it was removed, in Unix milliseconds by the server's clock, for a subscription made
    /// with `SubscribeOptions.timestamps`; nil otherwise, and for `notResumed`.
    public let time: Int64?

    init(key: String, reason: Reason, subject: String, position: String? = nil, time: Int64? = nil) {
        self.key = key
        self.reason = reason
        self.subject = subject
        self.position = position
        self.time = time
    }
}
