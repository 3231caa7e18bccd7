import RunnelJSON

/// What a `Subscription` yields: a value, or a gap where values will never come.
///
/// Thread rules: immutable values, `Sendable`. Lifetime rule: none (values).
public enum SubscriptionEvent: Sendable {
    case value(Value)
    case gap(Gap)
}

/// A value of a subscription, its bytes exactly as published.
///
/// Thread rules: immutable, `Sendable`. Lifetime rule: none (it owns its bytes).
public struct Value: Sendable {
    /// The value's JSON, byte for byte as the server sent it.
    public let json: [UInt8]
    /// Where it was published (for a pattern, the matching subject).
    public let subject: String
    /// Its position, `EPOCH:SEQ`; nil for a value a stage made from no value of the subject.
    public let position: String?
    /// When it was published, in Unix milliseconds by the server's clock, for a subscription
    /// made with `SubscribeOptions.timestamps`; nil otherwise, or for a value a stage made from
    /// a constant (version 1.3).
    public var time: Int64? = nil
    /// The key it was written to, for a value of a map subject (nil otherwise; version 1.3).
    public var key: String? = nil

    /// The value decoded (each call decodes again; keep it when needed twice).
    public var value: JSONValue { (try? JSONParser().parse(json)) ?? .null }
}

/// Values this subscription will never get, in their place in the stream.
///
/// Thread rules: immutable, `Sendable`. Lifetime rule: none (a value).
public struct Gap: Sendable, Equatable {
    public enum Reason: String, Sendable {
        /// The server dropped `count` events (its slow-consumer policy `drop`), or, in a
        /// cluster, missed `count` values of other nodes (nil when it does not know how many).
        case dropped
        /// This client's buffer was full and dropped `count` events.
        case overflow
        /// After a reconnect, or with a `from` the server could not continue from: values may
        /// have been missed (`count` nil; `cause` is the disconnect's reason).
        case notResumed = "not_resumed"
    }

    public let reason: Reason
    public let count: Int?
    public let cause: RunnelError?

    public init(_ reason: Reason, count: Int? = nil, cause: RunnelError? = nil) {
        self.reason = reason
        self.count = count
        self.cause = cause
    }
}
