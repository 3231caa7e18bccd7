/// The top-level keys of `runneld.toml`, with what each accepts and whether a SIGHUP reload can
/// apply a new value without a restart.
///
/// The single list both the parser (unknown keys are errors) and `changes(from:)` walk, so a
/// new key cannot be forgotten by one of them.
public enum ConfigKey: String, Sendable, CaseIterable {
    case listen
    case loops
    case httpListen = "http_listen"
    case maxBodyBytes = "max_body_bytes"
    case httpAllowedOrigins = "http_allowed_origins"
    case httpStaticDir = "http_static_dir"
    case maxLineBytes = "max_line_bytes"
    case maxPendingBytes = "max_pending_bytes"
    case maxExprBytes = "max_expr_bytes"
    case maxDepth = "max_depth"
    case maxConnections = "max_connections"
    case maxSubscriptionsPerConnection = "max_subscriptions_per_connection"
    case slowConsumer = "slow_consumer"
    case autoCreate = "auto_create"
    case compression
    case defaultReplayCapacity = "default_replay_capacity"
    case authTokens = "auth_tokens"
    case maxStages = "max_stages"
    case maxBufferValues = "max_buffer_values"
    case maxEvalSteps = "max_eval_steps"
    case maxEvalBytes = "max_eval_bytes"
    case maxEvalStepsPerSecond = "max_eval_steps_per_second"
    case maxEvalStepsBurst = "max_eval_steps_burst"
    case tokenEvalStepsPerSecond = "token_eval_steps_per_second"
    case tokenEvalStepsBurst = "token_eval_steps_burst"
    case maxPublishEvalMs = "max_publish_eval_ms"
    case logLevel = "log_level"
    case shutdownTimeout = "shutdown_timeout"
    case maxSubjects = "max_subjects"
    case dataDir = "data_dir"
    case fsync
    // Abuse limits: a silent or unauthenticated connection, one address, what a
    // connection's subscriptions pin, and the values subjects retain.
    case loginTimeout = "login_timeout"
    case maxConnectionsPerAddress = "max_connections_per_address"
    case maxSubscriptionBytes = "max_subscription_bytes"
    case maxReplayBytes = "max_replay_bytes"
    case maxMapKeys = "max_map_keys"
    case maxRetainedBytes = "max_retained_bytes"
    // Slow consumers: the soft limit and its grace (`max_pending_bytes` is the hard one).
    case softPendingBytes = "soft_pending_bytes"
    case softPendingSeconds = "soft_pending_seconds"
    case tlsListen = "tls_listen"
    case httpsListen = "https_listen"
    case tlsCertFile = "tls_cert_file"
    case tlsKeyFile = "tls_key_file"
    case tlsCAFile = "tls_ca_file"
    case tlsMinVersion = "tls_min_version"
    // JWTs minted by web apps: their keys and the claims they must carry.
    case jwtSecrets = "jwt_secrets"
    case jwtPublicKeys = "jwt_public_keys"
    case jwtJWKSFile = "jwt_jwks_file"
    case jwtIssuer = "jwt_issuer"
    case jwtAudience = "jwt_audience"
    case jwtLeeway = "jwt_leeway"
    // Clusters: the NATS system, the cluster's and the node's names (ClusterConfig).
    case clusterNATS = "cluster_nats"
    case clusterName = "cluster_name"
    case nodeName = "node_name"
    case clusterReplicas = "cluster_replicas"
    case clusterToken = "cluster_token"
    case clusterUser = "cluster_user"
    case clusterPassword = "cluster_password"
    case clusterConnectTimeout = "cluster_connect_timeout"
    case clusterSendBufferBytes = "cluster_send_buffer_bytes"
    case subjects
    case tokens

    /// The inclusive range of an integer key; `nil` for keys that are not integers.
    public var integerRange: ClosedRange<Int>? {
        switch self {
        case .loops: return 0...1024
        case .maxBodyBytes: return 1024...1_099_511_627_776
        case .maxLineBytes: return 64...1_073_741_824
        case .maxPendingBytes: return 1024...17_179_869_184
        case .maxExprBytes: return 16...1_048_576
        case .maxDepth: return 1...10_000
        case .maxConnections: return 1...1_000_000
        case .maxSubscriptionsPerConnection: return 1...10_000_000
        case .defaultReplayCapacity: return 1...ConfigKey.maxReplayCapacity
        case .maxStages: return 1...1024
        case .maxBufferValues: return 1...100_000_000
        case .maxEvalSteps: return 100...10_000_000_000
        case .maxEvalBytes: return 1024...17_179_869_184
        case .maxEvalStepsPerSecond: return 1000...1_000_000_000_000
        case .maxEvalStepsBurst: return 1000...1_000_000_000_000
        case .tokenEvalStepsPerSecond: return 1000...1_000_000_000_000
        case .tokenEvalStepsBurst: return 1000...1_000_000_000_000
        case .maxPublishEvalMs: return 1...60_000
        case .maxSubjects: return 1...100_000_000
        case .maxConnectionsPerAddress: return 0...1_000_000
        case .maxSubscriptionBytes: return 1024...17_179_869_184
        case .maxReplayBytes: return 1024...1_099_511_627_776
        case .maxMapKeys: return 1...100_000_000
        case .maxRetainedBytes: return 1024...1_099_511_627_776
        case .softPendingBytes: return 1024...17_179_869_184
        case .jwtLeeway: return 0...3600
        case .clusterReplicas: return 1...5
        case .clusterSendBufferBytes: return 65536...17_179_869_184
        default: return nil
        }
    }

    /// The largest replay capacity, for `default_replay_capacity` and `[[subjects]]`.
    public static let maxReplayCapacity = 10_000_000

    /// The longest `shutdown_timeout`, `login_timeout` and `soft_pending_seconds`, in seconds.
    public static let maxTimeoutSeconds = 3600.0

    /// Whether a reload applies a changed value live. `listen`, `http_listen`, `tls_listen`,
    /// `https_listen`, `loops`, `data_dir`, `fsync` and the cluster keys need a restart; `subjects` is decided per subject
    /// (new ones are created, others ignored). The TLS files and version apply to connections
    /// accepted after the reload. `tokens` and the JWT keys are live: open connections move to
    /// their token's new rights, or are closed when it is gone (or, for a JWT, no longer verifies).
    public var isLive: Bool {
        switch self {
        case .listen, .httpListen, .tlsListen, .httpsListen, .loops, .dataDir, .fsync, .subjects: return false
        case .clusterNATS, .clusterName, .nodeName, .clusterReplicas, .clusterToken, .clusterUser, .clusterPassword,
            .clusterConnectTimeout, .clusterSendBufferBytes:
            return false
        default: return true
        }
    }
}
