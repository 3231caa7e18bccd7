import Logging
import RunnelCrypto
import RunnelExpression
import RunnelProtocol
import RunnelTLS

/// Everything `runneld` can be configured with, each field holding its documented default.
///
/// Built from `runneld.toml` by `ServerConfig.parse(toml:origin:)` / `load(path:)`, then
/// overridden by command-line flags. An immutable `Sendable` value: the server reads one
/// snapshot, and a SIGHUP reload builds a new one and applies `changes(from:)`.
/// The shipped `config/runneld.toml` documents every key.
public struct ServerConfig: Sendable, Equatable {
    /// Where to accept TCP connections (`listen`, default `127.0.0.1:7455`). Needs a restart.
    public var listen: ListenAddress = .defaultAddress
    /// Where to serve HTTP (`http_listen`, default `127.0.0.1:7456`; `""` turns it off, nil
    /// here). Needs a restart.
    public var httpListen: ListenAddress? = .defaultHTTPAddress
    /// How many event loops serve connections (`loops`, default 0: one per CPU the process may
    /// run on, its affinity mask; 1: a single loop). Needs a restart.
    public var loops: Int = 0
    /// Longest HTTP request body, in bytes (`max_body_bytes`, default 16 MiB).
    public var maxBodyBytes: Int = 16_777_216
    /// Web origins (`https://example.com`) whose pages may publish over HTTP and get CORS
    /// headers (`http_allowed_origins`, default none).
    public var httpAllowedOrigins: [String] = []
    /// A folder whose files the HTTP front door serves at the paths its own routes do not take
    /// (`http_static_dir`, default none: off); checked to be a readable directory when the
    /// configuration is read.
    public var httpStaticDir: String? = nil
    /// Longest request line, in bytes (`max_line_bytes`, default 1 MiB).
    public var maxLineBytes: Int = 1_048_576
    /// Unsent output per connection past which it is a slow consumer at once: the hard limit
    /// (`max_pending_bytes`, default 64 MiB, NATS's `max_pending`).
    public var maxPendingBytes: Int = 67_108_864
    /// Longest expression in a stage, in bytes (`max_expr_bytes`, default 4096).
    public var maxExprBytes: Int = 4096
    /// Deepest JSON nesting accepted in a request (`max_depth`, default 128).
    public var maxDepth: Int = 128
    /// Open connections at once (`max_connections`, default 10000).
    public var maxConnections: Int = 10_000
    /// Subscriptions one connection may hold (`max_subscriptions_per_connection`, 10000).
    public var maxSubscriptionsPerConnection: Int = 10_000
    /// What to do with a slow consumer (`slow_consumer`, default `disconnect`); a subject may
    /// name its own (`create`, `[[subjects]]`).
    public var slowConsumer: SlowConsumerPolicy = .disconnect
    /// Whether `pub`/`sub` on an unknown subject creates it (`auto_create`, default true).
    public var autoCreate: Bool = true
    /// Whether HTTP answers and event streams are gzip'd for a request that accepts it, and a
    /// WebSocket client that offers permessage-deflate gets it (`compression`,
    /// default true; applies to WebSockets opened after a reload).
    public var compression: Bool = true
    /// A replay subject's capacity when `create` gives none (`default_replay_capacity`, 100).
    public var defaultReplayCapacity: Int = 100
    /// Accepted `auth` tokens (`auth_tokens`); empty means no authentication.
    public var authTokens: [String] = []
    /// Stages in one `sub` (`max_stages`, default 32).
    public var maxStages: Int = 32
    /// Values one stage may buffer: `collect`, `takeLast`, `bufferWithTime`, `zipWith`...
    /// (`max_buffer_values`, default 100000).
    public var maxBufferValues: Int = 100_000
    /// Steps of work one evaluation of a stage's expression may take (`max_eval_steps`,
    /// default 1000000; see `ExpressionBudget` for what a step is).
    public var maxEvalSteps: Int = ExpressionBudget.defaultMaxSteps
    /// Bytes of values one evaluation of a stage's expression may build (`max_eval_bytes`,
    /// default 16 MiB).
    public var maxEvalBytes: Int = ExpressionBudget.defaultMaxBytes
    /// Steps of stage evaluation one connection may spend per second, sustained
    /// (`max_eval_steps_per_second`, default 50000000; see `EvaluationBudget`).
    public var maxEvalStepsPerSecond: Int = 50_000_000
    /// Steps of stage evaluation one connection may spend at once, from a full budget
    /// (`max_eval_steps_burst`, default 10000000).
    public var maxEvalStepsBurst: Int = 10_000_000
    /// The same for all connections of one configured token together (`token_eval_steps_per_second`,
    /// default 200000000, and `token_eval_steps_burst`, default 40000000): a client that opens
    /// many connections with one token gets one token's budget. Not applied without tokens.
    public var tokenEvalStepsPerSecond: Int = 200_000_000
    public var tokenEvalStepsBurst: Int = 40_000_000
    /// Milliseconds the stage evaluations of one publish may hold the loop
    /// (`max_publish_eval_ms`, default 20; see `PublishEvaluationBound`).
    public var maxPublishEvalMs: Int = 20
    /// Least severe level logged (`log_level`, default `info`).
    public var logLevel: Logger.Level = .info
    /// How long SIGTERM waits for pending output to flush (`shutdown_timeout`, default 5 s).
    public var shutdownTimeout: Duration = .seconds(5)
    /// Subjects alive at once, protecting memory (`max_subjects`, default 100000).
    public var maxSubjects: Int = 100_000
    /// Where durable subjects are kept (`data_dir`); nil: none can be created.
    public var dataDir: String? = nil
    /// When durable subjects' changes reach the disk (`fsync`, default `everysec`).
    public var fsync: FsyncMode = .everysec
    /// How long a new connection may go without sending a request, or, when tokens are
    /// configured, without authenticating, before it is closed (`login_timeout`, default 30 s;
    /// zero: never).
    public var loginTimeout: Duration = .seconds(30)
    /// Open connections from one IP address at once, over every listener (
    /// `max_connections_per_address`, default 0: no limit beyond `max_connections`).
    public var maxConnectionsPerAddress: Int = 0
    /// Bytes of `sid`s and stage lists one connection's subscriptions may hold together
    /// (`max_subscription_bytes`, default 16 MiB).
    public var maxSubscriptionBytes: Int = 16_777_216
    /// Bytes of values one replay subject keeps; past it its oldest go (`max_replay_bytes`,
    /// default 64 MiB). Applies to subjects created after it is set.
    public var maxReplayBytes: Int = 67_108_864
    /// The most keys a map holds, and what its `max_keys` may ask for at most
    /// (`max_map_keys`, default 100,000). Applies to maps created after it is set.
    public var maxMapKeys: Int = 100_000
    /// Bytes of values every replay and behavior subject keep together; past it, values for
    /// them are refused with `limit` (`max_retained_bytes`, default 1 GiB).
    public var maxRetainedBytes: Int = 1_073_741_824
    /// Unsent output per connection past which the grace runs, replies are held and, under
    /// `backpressure`, publishers are paused: the soft limit (`soft_pending_bytes`, default
    /// 8 MiB, Redis's pub/sub soft limit; clamped to `max_pending_bytes`, see
    /// `softPendingLimit`).
    public var softPendingBytes: Int = 8_388_608
    /// How long a connection may stay over the soft limit before it is a slow consumer
    /// (`soft_pending_seconds`, default 10 s, NATS's `write_deadline`; zero: at once).
    public var softPendingSeconds: Duration = .seconds(10)
    /// Where to accept the line protocol over TLS (`tls_listen`; default none, off). Needs a
    /// restart.
    public var tlsListen: ListenAddress? = nil
    /// Where to serve HTTP over TLS (`https_listen`; default none, off). Needs a restart.
    public var httpsListen: ListenAddress? = nil
    /// The TLS certificate chain, PEM, the server's certificate first (`tls_cert_file`); needed
    /// by `tls_listen` and `https_listen`. Re-read on every reload.
    public var tlsCertFile: String? = nil
    /// The certificate's private key, PEM (`tls_key_file`). Re-read on every reload.
    public var tlsKeyFile: String? = nil
    /// CA certificates, PEM (`tls_ca_file`): when set, TLS clients must present a certificate
    /// signed by one of them. Re-read on every reload.
    public var tlsCAFile: String? = nil
    /// The oldest TLS version accepted (`tls_min_version`, `1.2` or `1.3`, default `1.2`).
    public var tlsMinVersion: TLSVersion = .tls12
    /// HMAC secrets that verify HS256 JWTs (`jwt_secrets`, default none), each at least 32 bytes.
    public var jwtSecrets: [String] = []
    /// PEM files of RSA or P-256 public keys that verify RS256 and ES256 JWTs
    /// (`jwt_public_keys`, default none). Re-read on every reload.
    public var jwtPublicKeys: [String] = []
    /// A JWKS file of such keys, chosen by `kid` (`jwt_jwks_file`, default none). Re-read on
    /// every reload.
    public var jwtJWKSFile: String? = nil
    /// When set, a JWT's `iss` must be it (`jwt_issuer`, default none).
    public var jwtIssuer: String? = nil
    /// When set, a JWT's `aud` must be or include it (`jwt_audience`, default none).
    public var jwtAudience: String? = nil
    /// Seconds of clock skew allowed to `exp` and `nbf` (`jwt_leeway`, default 5).
    public var jwtLeeway: Int = 5
    /// The keys of `jwt_secrets`, `jwt_public_keys` and `jwt_jwks_file`, loaded when the
    /// configuration was read; empty: JWTs are not accepted.
    var jwtKeys: [JWTKey] = []

    /// The cluster this node belongs to, if any (`cluster_*`, `node_name`).
    public var cluster = ClusterConfig()

    /// Subjects created at start-up (`[[subjects]]`), in file order.
    public var subjects: [SubjectDefinition] = []
    /// Tokens with their own rights (`[[tokens]]`), beside `auth_tokens`, which may do everything.
    public var tokens: [TokenDefinition] = []

    /// The soft limit as it applies: `soft_pending_bytes`, at most `max_pending_bytes` (so a
    /// configured `max_pending_bytes` alone keeps its meaning of a limit passed at once).
    public var softPendingLimit: Int { min(softPendingBytes, maxPendingBytes) }

    /// The built-in defaults, used when no config file is given.
    public init() {}

    /// The conventional path of the packaged config file. `runneld` reads a file only when
    /// `--config` names one; packages pass `--config /etc/runnel/runneld.toml`.
    public static let packagedPath = "/etc/runnel/runneld.toml"
}
