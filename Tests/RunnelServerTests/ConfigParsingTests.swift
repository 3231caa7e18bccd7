import Logging
import RunnelExpression
import Testing

@testable import RunnelServer

@Suite("ServerConfig parsing")
struct ConfigParsingTests {
    @Test func defaultsMatchTheDocumentedValues() {
        let config = ServerConfig()
        #expect(config.listen.description == "127.0.0.1:7455")
        #expect(config.maxLineBytes == 1_048_576)
        #expect(config.maxPendingBytes == 67_108_864)
        #expect(config.softPendingBytes == 8_388_608)
        #expect(config.softPendingSeconds == .seconds(10))
        #expect(config.maxExprBytes == 4096)
        #expect(config.maxDepth == 128)
        #expect(config.maxConnections == 10_000)
        #expect(config.maxSubscriptionsPerConnection == 10_000)
        #expect(config.slowConsumer == .disconnect)
        #expect(config.autoCreate)
        #expect(config.compression)
        #expect(config.defaultReplayCapacity == 100)
        #expect(config.authTokens.isEmpty)
        #expect(config.maxStages == 32)
        #expect(config.maxBufferValues == 100_000)
        #expect(config.maxEvalSteps == 1_000_000)
        #expect(config.maxEvalBytes == 16 * 1024 * 1024)
        #expect(config.maxEvalStepsPerSecond == 50_000_000)
        #expect(config.maxEvalStepsBurst == 10_000_000)
        #expect(config.maxPublishEvalMs == 20)
        #expect(StageLimits(config: config).evalBudget == ExpressionBudget.standard)
        #expect(config.logLevel == .info)
        #expect(config.shutdownTimeout == .seconds(5))
        #expect(config.maxSubjects == 100_000)
        #expect(config.subjects.isEmpty)
    }

    @Test func anEmptyDocumentGivesTheDefaults() throws {
        #expect(try ServerConfig.parse(toml: "") == ServerConfig())
        #expect(try ServerConfig.parse(toml: "# only a comment\n\n") == ServerConfig())
    }

    @Test func everyKeyIsParsed() throws {
        let config = try ServerConfig.parse(
            toml: """
                listen = "[::1]:0"
                max_line_bytes = 64
                max_pending_bytes = 2048
                max_expr_bytes = 100
                max_depth = 9
                max_connections = 3
                max_subscriptions_per_connection = 4
                slow_consumer = "drop"
                auto_create = false
                compression = false
                default_replay_capacity = 7
                auth_tokens = ["a", "b c"]
                max_stages = 5
                max_buffer_values = 6
                max_eval_steps = 7000
                max_eval_bytes = 8192
                max_eval_steps_per_second = 9000
                max_eval_steps_burst = 10000
                max_publish_eval_ms = 11
                log_level = "debug"
                shutdown_timeout = 1.5
                max_subjects = 8

                [[subjects]]
                name = "plain"

                [[subjects]]
                name = "sensors.kitchen.temp"
                kind = "replay"
                capacity = 10

                [[subjects]]
                name = "replay.default"
                kind = "replay"
                retain_s = 0.0015

                [[subjects]]
                name = "mode"
                kind = "behavior"
                value = { level = 3, name = "auto\\n", on = true, ratio = 0.5, list = [1, 2.0] }

                [[subjects]]
                name = "nothing"
                kind = "behavior"
                """)
        #expect(config.listen.host == "::1")
        #expect(config.listen.port == 0)
        #expect(config.listen.isIPv6)
        #expect(config.listen.description == "[::1]:0")
        #expect(config.maxLineBytes == 64)
        #expect(config.maxPendingBytes == 2048)
        #expect(config.maxExprBytes == 100)
        #expect(config.maxDepth == 9)
        #expect(config.maxConnections == 3)
        #expect(config.maxSubscriptionsPerConnection == 4)
        #expect(config.slowConsumer == .drop)
        #expect(config.autoCreate == false)
        #expect(config.compression == false)
        #expect(config.defaultReplayCapacity == 7)
        #expect(config.authTokens == ["a", "b c"])
        #expect(config.maxStages == 5)
        #expect(config.maxBufferValues == 6)
        #expect(config.maxEvalSteps == 7000)
        #expect(config.maxEvalBytes == 8192)
        #expect(config.maxEvalStepsPerSecond == 9000)
        #expect(config.maxEvalStepsBurst == 10000)
        #expect(config.maxPublishEvalMs == 11)
        #expect(StageLimits(config: config).evalBudget == ExpressionBudget(maxSteps: 7000, maxBytes: 8192))
        #expect(config.logLevel == .debug)
        #expect(config.shutdownTimeout == .milliseconds(1500))
        #expect(config.shutdownTimeoutSeconds == 1.5)
        #expect(config.maxSubjects == 8)
        #expect(
            config.subjects == [
                SubjectDefinition(name: "plain", kind: .subject),
                SubjectDefinition(name: "sensors.kitchen.temp", kind: .replay, capacity: 10),
                // retain_s is kept to the millisecond, rounded up.
                SubjectDefinition(name: "replay.default", kind: .replay, capacity: 7, retainMilliseconds: 2),
                SubjectDefinition(
                    name: "mode", kind: .behavior,
                    initialValueJSON: #"{"level":3,"list":[1,2],"name":"auto\n","on":true,"ratio":0.5}"#),
                SubjectDefinition(name: "nothing", kind: .behavior, initialValueJSON: "null"),
            ])
    }

    @Test func integerShutdownTimeoutAndZero() throws {
        #expect(try ServerConfig.parse(toml: "shutdown_timeout = 0").shutdownTimeout == .zero)
        #expect(try ServerConfig.parse(toml: "shutdown_timeout = 30").shutdownTimeout == .seconds(30))
    }

    @Test func behaviorValuesOfEveryTOMLType() throws {
        func value(_ toml: String) throws -> String? {
            let config = try ServerConfig.parse(
                toml: "[[subjects]]\nname = \"b\"\nkind = \"behavior\"\nvalue = \(toml)")
            return config.subjects.first?.initialValueJSON
        }
        #expect(try value("42") == "42")
        #expect(try value("-2.25") == "-2.25")
        #expect(try value("\"q\\\"uote\"") == #""q\"uote""#)
        #expect(try value("false") == "false")
        #expect(try value("[]") == "[]")
        #expect(try value("{}") == "{}")
        #expect(try value("[[1], {a = \"x\"}]") == #"[[1],{"a":"x"}]"#)
        #expect(try value("1979-05-27") == #""1979-05-27""#)
    }

    @Test func listenAddressForms() {
        func parse(_ text: String) -> ListenAddress? { try? ListenAddress.parse(text).get() }
        #expect(parse("127.0.0.1:7455")?.port == 7455)
        #expect(parse("0.0.0.0:0")?.port == 0)
        #expect(parse("[::]:80")?.host == "::")
        #expect(parse("[fe80::1]:65535")?.port == 65535)
        #expect(parse("localhost:7455") == nil)
        #expect(parse("127.0.0.1") == nil)
        #expect(parse("127.0.0.1:") == nil)
        #expect(parse("127.0.0.1:65536") == nil)
        #expect(parse("127.0.0.1:-1") == nil)
        #expect(parse("127.0.0.1:+1") == nil)
        #expect(parse("::1:7455") == nil)
        #expect(parse("[::1]7455") == nil)
        #expect(parse("[127.0.0.1]:7455") == nil)
        #expect(parse("[::1:7455") == nil)
        #expect(parse(":7455") == nil)
    }

    @Test func theShippedConfigFileParsesToTheDefaultsButForItsDataDirectory() throws {
        let config = try ServerConfig.load(path: Self.shippedConfigPath)
        var expected = ServerConfig()
        // `make run` keeps durable subjects in the working tree (`make install` rewrites it).
        expected.dataDir = "data"
        #expect(config == expected)
    }

    @Test func durableSettingsAndTheirErrors() throws {
        let config = try ServerConfig.parse(
            toml: """
                data_dir = "/srv/runnel"
                fsync = "always"
                [[subjects]]
                name = "kept"
                kind = "replay"
                durable = true
                """)
        #expect(config.dataDir == "/srv/runnel" && config.fsync == .always && config.subjects[0].durable)
        #expect(throws: ConfigError.self) { try ServerConfig.parse(toml: #"fsync = "sometimes""#) }
        #expect(throws: ConfigError.self) { try ServerConfig.parse(toml: #"data_dir = """#) }
        #expect {
            try ServerConfig.parse(toml: "[[subjects]]\nname = \"k\"\nkind = \"replay\"\ndurable = true")
        } throws: { "\($0)".contains("needs data_dir") }
        #expect {
            try ServerConfig.parse(toml: "data_dir = \"d\"\n[[subjects]]\nname = \"k\"\ndurable = true")
        } throws: { "\($0)".contains("only replay, behavior and map subjects can be durable") }
    }

    @Test func tlsKeysParseAndAListenerNeedsACertificate() throws {
        let config = try ServerConfig.parse(
            toml: """
                tls_listen = "0.0.0.0:7443"
                https_listen = "[::]:7444"
                tls_cert_file = "/etc/runnel/tls/server.pem"
                tls_key_file = "/etc/runnel/tls/server.key"
                tls_ca_file = ""
                tls_min_version = "1.3"
                """)
        #expect(config.tlsListen?.description == "0.0.0.0:7443" && config.httpsListen?.description == "[::]:7444")
        #expect(config.tlsCertFile == "/etc/runnel/tls/server.pem" && config.tlsKeyFile == "/etc/runnel/tls/server.key")
        #expect(config.tlsCAFile == nil && config.tlsMinVersion == .tls13 && config.servesTLS)
        #expect(ServerConfig().tlsListen == nil && ServerConfig().httpsListen == nil && !ServerConfig().servesTLS)
        #expect {
            try ServerConfig.parse(toml: #"tls_listen = "127.0.0.1:7443""#)
        } throws: {
            "\($0)"
                == "config: key 'tls_listen': a TLS listener needs tls_cert_file and tls_key_file (PEM certificate chain and key)"
        }
        #expect {
            try ServerConfig.parse(toml: "https_listen = \"127.0.0.1:7444\"\ntls_cert_file = \"/c.pem\"")
        } throws: { "\($0)".contains("key 'https_listen': a TLS listener needs") }
        #expect {
            try ServerConfig.parse(toml: #"tls_min_version = "1.1""#)
        } throws: { "\($0)" == #"config: key 'tls_min_version': must be "1.2" or "1.3", got the string "1.1""# }
        #expect {
            try ServerConfig.resolve(configPath: nil, listen: nil, tlsListen: "127.0.0.1:0", logLevel: nil)
        } throws: { "\($0)".contains("a TLS listener needs tls_cert_file") }
    }

    @Test func theShippedConfigDocumentsEveryKey() throws {
        let text = try #require(try? ConfigFileReader.readText(path: Self.shippedConfigPath).get())
        for key in ConfigKey.allCases {
            // The tables are documented by commented examples.
            let pattern = [.subjects, .tokens].contains(key) ? "[[\(key.rawValue)]]" : "\n\(key.rawValue) = "
            #expect(text.contains(pattern), "config/runneld.toml does not set \(key.rawValue)")
        }
    }

    @Test func loadNamesThePathInErrors() {
        let error = #expect(throws: ConfigError.self) {
            try ServerConfig.load(path: "/nonexistent/runneld.toml")
        }
        #expect(error?.description == "config /nonexistent/runneld.toml: cannot read: No such file or directory")
    }

    @Test func resolveAppliesFlagsOverTheFile() throws {
        let config = try ServerConfig.resolve(
            configPath: Self.shippedConfigPath, listen: "[::1]:9000", logLevel: "trace")
        #expect(config.listen.description == "[::1]:9000")
        #expect(config.logLevel == .trace)
        #expect(try ServerConfig.resolve(configPath: nil, listen: nil, logLevel: nil) == ServerConfig())
    }

    @Test func summaryListsEveryKeyAndHidesTokens() throws {
        var config = try ServerConfig.parse(
            toml: "auth_tokens = [\"topsecret\"]\n[[subjects]]\nname = \"a.b\"\nkind = \"replay\"")
        config.shutdownTimeout = .milliseconds(250)
        let lines = config.summaryLines
        #expect(lines.count == ConfigKey.allCases.count + 1)
        #expect(lines.contains("listen = \"127.0.0.1:7455\""))
        #expect(lines.contains("shutdown_timeout = 0.25"))
        #expect(lines.contains("subject a.b (replay, capacity 100)"))
        #expect(!lines.joined().contains("topsecret"))
    }

    static var shippedConfigPath: String {
        // Tests/RunnelServerTests/<this file> -> package root.
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(3)
        return components.joined(separator: "/") + "/config/runneld.toml"
    }
}
