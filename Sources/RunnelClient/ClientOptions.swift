import RunnelJSON

/// How a `RunnelClient` connects and behaves: TLS, reconnects, timeouts, each subscription's
/// buffer, and the callbacks for what has no caller to tell (a lost connection, a quiet
/// publish the server refused).
///
/// Thread rules: a value, `Sendable`; the callbacks run on the client's reader thread and must
/// be quick (a slow one holds up the connection). Lifetime rule: none (a value).
public struct ClientOptions: Sendable {
    /// What an iterated subscription does when its buffer is full.
    public enum Overflow: Sendable {
        /// Newer values are dropped, counted, and reported as one `Gap` (`overflow`).
        case drop
        /// The client stops reading the connection until the consumer takes an event: nothing
        /// is dropped here, and the server's slow-consumer policy applies.
        case wait
    }

    /// For `runnels://`: the CAs to trust, the name to check, a client certificate. nil: the
    /// system's CAs and the URL's host.
    public var tls: TLSSettings?
    /// Reconnect when the connection is lost (never after `unauthorized`).
    public var reconnect = true
    /// The wait before the first reconnect attempt, doubling up to `limit`; each wait is drawn
    /// from its upper half.
    public var backoff: (first: Duration, limit: Duration) = (.milliseconds(100), .seconds(5))
    /// To connect and get the answer to `auth` or `ping`.
    public var timeout: Duration = .seconds(10)
    /// How long a call (`publish`, `request`, `subscribe`) may take, the wait for a connection
    /// that is down included, before it throws `timeout`; each call may give its own.
    public var callTimeout: Duration = .seconds(30)
    /// After this long without a byte from the server the client sends a `ping`; when nothing
    /// comes within `timeout` more, the connection is taken for lost and the client reconnects
    /// (a server or network gone without a word is noticed). nil: never.
    public var keepalive: Duration? = .seconds(30)
    /// Events each subscription holds for its consumer at most.
    public var buffer = 1000
    public var overflow = Overflow.drop
    /// Called with the reason each time the connection is lost: a `closing` line's error
    /// (`slow_consumer`, `unauthorized`, `limit`) or `connection_lost`.
    public var onDisconnect: (@Sendable (RunnelError) -> Void)?
    /// Called each time the connection is back, every subscription subscribed again.
    public var onReconnect: (@Sendable () -> Void)?
    /// Called with the error of a publish without reply that the server refused (it answers
    /// only those); nil writes it to stderr.
    public var onError: (@Sendable (RunnelError) -> Void)?

    public init() {}
}

/// What `RunnelClient.subscribe` asks the server for: `filter`, `map` and `throttle` become
/// stages in that order (as `runnel sub`'s options do, `StageShortcuts`), then `ops`; `from` is
/// a position to continue right after (one subject only).
///
/// Thread rules: a value, `Sendable`. Lifetime rule: none (a value).
public struct SubscribeOptions: Sendable {
    public var filter: String?
    public var map: String?
    /// Seconds.
    public var throttle: Double?
    /// More stages (stage objects), after the shortcuts.
    public var ops: [JSONValue] = []
    public var from: String?
    /// When this reader lags, the server keeps only the latest value for it, and says how many
    /// it replaced (a `.gap(.dropped)`; protocol version 1.3).
    public var conflate: Bool
    /// Start at this time (Unix ms) on a replay or behavior subject: the values it still keeps
    /// from then on, then live ones; a `.gap(.notResumed)` first when some are no longer kept.
    /// Once a value has come, a new connection resumes from its position instead.
    public var since: Int64?
    /// End the subscription (it completes) once the subject's time passes this (Unix ms).
    public var until: Int64?
    /// Values carry their publish time (`Value.time`).
    public var timestamps: Bool

    public init(
        filter: String? = nil, map: String? = nil, throttle: Double? = nil, ops: [JSONValue] = [], from: String? = nil,
        conflate: Bool = false, since: Int64? = nil, until: Int64? = nil, timestamps: Bool = false
    ) {
        self.filter = filter
        self.map = map
        self.throttle = throttle
        self.ops = ops
        self.from = from
        self.conflate = conflate
        self.since = since
        self.until = until
        self.timestamps = timestamps
    }

    /// The stage list the `sub` request carries.
    var stages: [JSONValue] { StageShortcuts.stages(filter: filter, map: map, throttle: throttle, take: nil) + ops }
}
