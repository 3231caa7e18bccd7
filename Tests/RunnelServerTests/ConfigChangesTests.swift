import Testing

@testable import RunnelServer

@Suite("ServerConfig.changes(from:)")
struct ConfigChangesTests {
    @Test func identicalConfigsHaveNoChanges() throws {
        #expect(ServerConfig().changes(from: ServerConfig()).isEmpty)
        let config = try ServerConfig.parse(toml: "auth_tokens = [\"t\"]\n[[subjects]]\nname = \"a\"")
        #expect(config.changes(from: config).isEmpty)
    }

    @Test func liveKeysRenderOldAndNew() throws {
        let old = ServerConfig()
        let new = try ServerConfig.parse(
            toml: """
                max_line_bytes = 4096
                slow_consumer = "drop"
                auto_create = false
                log_level = "debug"
                shutdown_timeout = 0.5
                """)
        #expect(
            new.changes(from: old) == [
                ConfigChange(key: "max_line_bytes", oldValue: "1048576", newValue: "4096", applicability: .live),
                ConfigChange(
                    key: "slow_consumer", oldValue: "\"disconnect\"", newValue: "\"drop\"", applicability: .live),
                ConfigChange(key: "auto_create", oldValue: "true", newValue: "false", applicability: .live),
                ConfigChange(key: "log_level", oldValue: "\"info\"", newValue: "\"debug\"", applicability: .live),
                ConfigChange(key: "shutdown_timeout", oldValue: "5", newValue: "0.5", applicability: .live),
            ])
    }

    @Test func listenNeedsARestart() throws {
        let new = try ServerConfig.parse(toml: "listen = \"[::1]:7455\"")
        let changes = new.changes(from: ServerConfig())
        #expect(
            changes == [
                ConfigChange(
                    key: "listen", oldValue: "\"127.0.0.1:7455\"", newValue: "\"[::1]:7455\"",
                    applicability: .needsRestart)
            ])
        #expect(changes[0].description == "listen: \"127.0.0.1:7455\" -> \"[::1]:7455\" (needs restart)")
    }

    @Test func authTokenChangesAreLiveAndNeverShowTheTokens() throws {
        let old = try ServerConfig.parse(toml: "auth_tokens = [\"alpha\"]")
        let new = try ServerConfig.parse(toml: "auth_tokens = [\"beta\"]")
        let changes = new.changes(from: old)
        #expect(changes.count == 1)
        #expect(changes.first?.key == "auth_tokens")
        #expect(changes.first?.applicability == .live)
        #expect(!changes.description.contains("alpha") && !changes.description.contains("beta"))
        let cleared = ServerConfig().changes(from: old)
        #expect(cleared.first?.newValue == "[] (no auth)")
    }

    @Test func subjectsAreCreatedLiveAndOtherwiseIgnored() throws {
        let old = try ServerConfig.parse(
            toml: """
                [[subjects]]
                name = "kept"
                [[subjects]]
                name = "changed"
                kind = "replay"
                capacity = 5
                [[subjects]]
                name = "removed"
                """)
        let new = try ServerConfig.parse(
            toml: """
                [[subjects]]
                name = "kept"
                [[subjects]]
                name = "changed"
                kind = "replay"
                capacity = 6
                [[subjects]]
                name = "added"
                kind = "behavior"
                value = 1
                """)
        #expect(
            new.changes(from: old) == [
                ConfigChange(
                    key: "subjects.changed", oldValue: "changed (replay, capacity 5)",
                    newValue: "changed (replay, capacity 6)", applicability: .ignored),
                ConfigChange(
                    key: "subjects.added", oldValue: "(none)", newValue: "added (behavior, value 1)",
                    applicability: .live),
                ConfigChange(
                    key: "subjects.removed", oldValue: "removed (subject)", newValue: "(none)",
                    applicability: .ignored),
            ])
        #expect(new.addedSubjects(since: old).map(\.name) == ["added"])
        #expect(old.addedSubjects(since: new).map(\.name) == ["removed"])
        #expect(new.addedSubjects(since: new).isEmpty)
    }

    @Test func everyTopLevelKeyIsComparedExceptSubjects() throws {
        // A config differing in every key yields one change per key, so no key is forgotten.
        // The JWT keys' files are read as the configuration is, and the static files' folder
        // checked.
        try ConfigJWTTests.withFiles(["k.pem": JWTFixtures.rsaPEM, "k.json": JWTFixtures.jwks]) { directory in
            let new = try ServerConfig.parse(
                toml: """
                    listen = "127.0.0.1:1"
                    loops = 3
                    http_listen = ""
                    max_body_bytes = 4096
                    http_allowed_origins = ["https://a.example"]
                    http_static_dir = "\(directory)"
                    max_line_bytes = 100
                    max_pending_bytes = 2000
                    max_expr_bytes = 20
                    max_depth = 2
                    max_connections = 2
                    max_subscriptions_per_connection = 2
                    slow_consumer = "drop"
                    auto_create = false
                    compression = false
                    default_replay_capacity = 2
                    auth_tokens = ["x"]
                    max_stages = 2
                    max_buffer_values = 2
                    max_eval_steps = 200
                    max_eval_bytes = 2048
                    max_eval_steps_per_second = 5000
                    max_eval_steps_burst = 6000
                    max_publish_eval_ms = 7
                    log_level = "error"
                    shutdown_timeout = 2
                    max_subjects = 2
                    data_dir = "/var/lib/elsewhere"
                    fsync = "always"
                    token_eval_steps_per_second = 5000
                    token_eval_steps_burst = 5000
                    login_timeout = 5
                    max_connections_per_address = 3
                    max_subscription_bytes = 4096
                    max_replay_bytes = 4096
                    max_map_keys = 50
                    max_retained_bytes = 8192
                    soft_pending_bytes = 1500
                    soft_pending_seconds = 3
                    tls_listen = "127.0.0.1:3"
                    https_listen = "127.0.0.1:4"
                    tls_cert_file = "/c.pem"
                    tls_key_file = "/k.pem"
                    tls_ca_file = "/ca.pem"
                    tls_min_version = "1.3"
                    jwt_secrets = ["\(JWTFixtures.secret)"]
                    jwt_public_keys = ["\(directory)/k.pem"]
                    jwt_jwks_file = "\(directory)/k.json"
                    jwt_issuer = "i"
                    jwt_audience = "a"
                    jwt_leeway = 0
                    cluster_nats = "nats://127.0.0.1:4222"
                    cluster_name = "c"
                    node_name = "n"
                    cluster_replicas = 3
                    cluster_token = "t"
                    cluster_user = "u"
                    cluster_password = "p"
                    cluster_connect_timeout = 3
                    cluster_send_buffer_bytes = 65536
                    [[tokens]]
                    token = "y"
                    """)
            let keys = new.changes(from: ServerConfig()).map(\.key)
            #expect(keys == ConfigKey.allCases.filter { $0 != .subjects }.map(\.rawValue))
        }
    }

    @Test func evaluationBudgetChangesLive() throws {
        let new = try ServerConfig.parse(toml: "max_eval_steps = 5000\nmax_eval_bytes = 65536")
        #expect(
            new.changes(from: ServerConfig()) == [
                ConfigChange(key: "max_eval_steps", oldValue: "1000000", newValue: "5000", applicability: .live),
                ConfigChange(key: "max_eval_bytes", oldValue: "16777216", newValue: "65536", applicability: .live),
            ])
    }
}
