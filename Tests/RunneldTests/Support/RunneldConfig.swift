import Foundation

/// The TOML configuration a test hands to `runneld`; unset keys are left out so the daemon's
/// defaults apply.
struct RunneldConfig {
    var maxLineBytes: Int?
    var maxPendingBytes: Int?
    var softPendingBytes: Int?
    /// `"disconnect"` or `"drop"`.
    var slowConsumer: String?
    var autoCreate: Bool?
    var authTokens: [String]?
    var defaultReplayCapacity: Int?
    var maxStages: Int?
    var maxBufferValues: Int?
    var maxConnections: Int?
    var maxSubjects: Int?
    var maxSubscriptionsPerConnection: Int?
    var maxEvalSteps: Int?
    var maxEvalBytes: Int?
    var maxPublishEvalMs: Int?
    /// `data_dir`: where durable subjects are kept.
    var dataDir: String?
    /// `"always"`, `"everysec"` or `"no"`.
    var fsync: String?
    /// Seconds; `0` turns it off.
    var loginTimeout: Double?
    /// Seconds.
    var shutdownTimeout: Double?
    var maxConnectionsPerAddress: Int?
    var maxSubscriptionBytes: Int?
    var maxReplayBytes: Int?
    var maxRetainedBytes: Int?
    /// `info` by default so the daemon logs the address it listens on.
    var logLevel: String? = "info"
    /// `[[subjects]]` tables, each a list of `key = value` pairs with values already in TOML.
    var subjects: [[(key: String, toml: String)]] = []

    /// The file's text: top-level keys first, then the `[[subjects]]` tables.
    var toml: String {
        var lines: [String] = []
        if let v = maxLineBytes { lines.append("max_line_bytes = \(v)") }
        if let v = maxPendingBytes { lines.append("max_pending_bytes = \(v)") }
        if let v = softPendingBytes { lines.append("soft_pending_bytes = \(v)") }
        if let v = slowConsumer { lines.append("slow_consumer = \(RunneldConfig.quote(v))") }
        if let v = autoCreate { lines.append("auto_create = \(v)") }
        if let v = authTokens { lines.append("auth_tokens = [\(v.map(RunneldConfig.quote).joined(separator: ", "))]") }
        if let v = defaultReplayCapacity { lines.append("default_replay_capacity = \(v)") }
        if let v = maxStages { lines.append("max_stages = \(v)") }
        if let v = maxBufferValues { lines.append("max_buffer_values = \(v)") }
        if let v = maxConnections { lines.append("max_connections = \(v)") }
        if let v = maxSubjects { lines.append("max_subjects = \(v)") }
        if let v = maxSubscriptionsPerConnection { lines.append("max_subscriptions_per_connection = \(v)") }
        if let v = maxEvalSteps { lines.append("max_eval_steps = \(v)") }
        if let v = maxEvalBytes { lines.append("max_eval_bytes = \(v)") }
        if let v = maxPublishEvalMs { lines.append("max_publish_eval_ms = \(v)") }
        if let v = dataDir { lines.append("data_dir = \(RunneldConfig.quote(v))") }
        if let v = fsync { lines.append("fsync = \(RunneldConfig.quote(v))") }
        if let v = loginTimeout { lines.append("login_timeout = \(v)") }
        if let v = shutdownTimeout { lines.append("shutdown_timeout = \(v)") }
        if let v = maxConnectionsPerAddress { lines.append("max_connections_per_address = \(v)") }
        if let v = maxSubscriptionBytes { lines.append("max_subscription_bytes = \(v)") }
        if let v = maxReplayBytes { lines.append("max_replay_bytes = \(v)") }
        if let v = maxRetainedBytes { lines.append("max_retained_bytes = \(v)") }
        if let v = logLevel { lines.append("log_level = \(RunneldConfig.quote(v))") }
        for table in subjects {
            lines.append("")
            lines.append("[[subjects]]")
            for (key, toml) in table { lines.append("\(key) = \(toml)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A TOML basic string.
    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += String(format: "\\u%04X", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
