import Testing

@testable import RunnelServer

/// Every rejected config names its key (or the option) and says what was expected.
@Suite("ServerConfig errors")
struct ConfigErrorTests {
    /// The error message for `toml`, parsed with the packaged path as origin.
    func message(_ toml: String) -> String? {
        do {
            _ = try ServerConfig.parse(toml: toml, origin: "config /etc/runnel/runneld.toml")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func theBriefsExampleMessage() {
        #expect(
            message("max_line_bytes = -5")
                == "config /etc/runnel/runneld.toml: key 'max_line_bytes': must be an integer between 64 and 1073741824, got -5"
        )
    }

    @Test(arguments: [
        ("max_line_bytes", "63"), ("max_line_bytes", "1073741825"), ("max_line_bytes", "\"big\""),
        ("max_line_bytes", "1.5"), ("max_pending_bytes", "0"), ("max_expr_bytes", "0"), ("max_depth", "0"),
        ("max_depth", "-1"), ("max_connections", "0"), ("max_subscriptions_per_connection", "0"),
        ("default_replay_capacity", "0"), ("max_stages", "0"), ("max_stages", "true"), ("max_buffer_values", "0"),
        ("max_subjects", "0"), ("max_subjects", "[]"), ("max_eval_steps", "99"), ("max_eval_steps", "10000000001"),
        ("max_eval_steps", "1.5"), ("max_eval_bytes", "1023"), ("max_eval_bytes", "\"big\""), ("max_eval_bytes", "-1"),
    ])
    func integerKeysRejectBadValues(key: String, value: String) throws {
        let text = try #require(message("\(key) = \(value)"))
        #expect(text.hasPrefix("config /etc/runnel/runneld.toml: key '\(key)': must be an integer between"))
        #expect(
            text.hasSuffix(", got \(value == "\"big\"" ? "the string \"big\"" : value == "[]" ? "an array" : value)"))
    }

    @Test func integerBoundsAreInclusive() throws {
        for key in ConfigKey.allCases {
            guard let range = key.integerRange else { continue }
            #expect(message("\(key.rawValue) = \(range.lowerBound)") == nil)
            #expect(message("\(key.rawValue) = \(range.upperBound)") == nil)
        }
    }

    @Test func everyOtherKeyNamesItselfWhenWrong() {
        let cases: [(String, String)] = [
            ("listen = 7455", "key 'listen': must be a string HOST:PORT, got 7455"),
            ("listen = \"localhost:7455\"", "key 'listen': the host must be a numeric IPv4 address"),
            ("listen = \"127.0.0.1:99999\"", "key 'listen': the port must be an integer between 0 and 65535"),
            (
                "slow_consumer = \"block\"",
                "key 'slow_consumer': must be \"disconnect\", \"drop\", \"backpressure\" or \"conflate\", got the string \"block\""
            ),
            ("auto_create = \"yes\"", "key 'auto_create': must be true or false, got the string \"yes\""),
            ("auto_create = 1", "key 'auto_create': must be true or false, got 1"),
            ("compression = \"on\"", "key 'compression': must be true or false, got the string \"on\""),
            ("auth_tokens = \"x\"", "key 'auth_tokens': must be an array of non-empty strings"),
            ("auth_tokens = [\"ok\", 5]", "key 'auth_tokens[1]': must be a non-empty string, got 5"),
            ("auth_tokens = [\"\"]", "key 'auth_tokens[0]': must be a non-empty string"),
            (
                "log_level = \"verbose\"",
                "key 'log_level': must be one of trace, debug, info, notice, warning, error, critical"
            ),
            ("log_level = 3", "key 'log_level': must be one of"),
            ("shutdown_timeout = -1", "key 'shutdown_timeout': must be a number of seconds between 0 and 3600, got -1"),
            ("shutdown_timeout = 3601", "key 'shutdown_timeout': must be a number"),
            ("shutdown_timeout = nan", "key 'shutdown_timeout': must be a number"),
            ("shutdown_timeout = \"5s\"", "key 'shutdown_timeout': must be a number"),
            ("colour = \"blue\"", "key 'colour': unknown key"),
            ("[server]\nlisten = \"127.0.0.1:1\"", "key 'server': unknown key"),
            ("subjects = \"a\"", "key 'subjects': must be an array of tables"),
            ("subjects = [1]", "key 'subjects[0]': must be a table with a name, got 1"),
        ]
        for (toml, expected) in cases {
            let text = message(toml)
            #expect(
                text?.hasPrefix("config /etc/runnel/runneld.toml: \(expected)") == true,
                "\(toml) gave \(text ?? "no error")")
        }
    }

    @Test func subjectTablesAreStrict() {
        let cases: [(String, String)] = [
            ("[[subjects]]\nkind = \"replay\"", "key 'subjects[0].name': missing"),
            ("[[subjects]]\nname = 5", "key 'subjects[0].name': must be a string, got 5"),
            ("[[subjects]]\nname = \"a..b\"", "key 'subjects[0].name': a subject name is dot-separated"),
            ("[[subjects]]\nname = \"a.*\"", "key 'subjects[0].name': '*' is not allowed in a subject name"),
            ("[[subjects]]\nname = \"a b\"", "key 'subjects[0].name': a subject name must not hold whitespace"),
            ("[[subjects]]\nname = \"\"", "key 'subjects[0].name': a subject name must not be empty"),
            (
                "[[subjects]]\nname = \"a\"\n[[subjects]]\nname = \"b\"\n[[subjects]]\nname = \"a\"",
                "key 'subjects[2].name': duplicate subject \"a\" (also subjects[0])"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"stream\"",
                "key 'subjects[0].kind': must be one of \"subject\", \"replay\", \"behavior\""
            ),
            (
                "[[subjects]]\nname = \"a\"\ncapacity = 3",
                "key 'subjects[0].capacity': only a replay subject takes a capacity"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"behavior\"\ncapacity = 3",
                "key 'subjects[0].capacity': only a replay subject takes a capacity (this one is behavior)"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"replay\"\ncapacity = 0",
                "key 'subjects[0].capacity': must be an integer between 1 and"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"replay\"\ncapacity = \"9\"",
                "key 'subjects[0].capacity': must be an integer"
            ),
            ("[[subjects]]\nname = \"a\"\nvalue = 1", "key 'subjects[0].value': only a behavior subject takes a value"),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"behavior\"\nretain_s = 60",
                "key 'subjects[0].retain_s': only a replay subject takes retain_s (this one is behavior)"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"replay\"\nretain_s = 0",
                "key 'subjects[0].retain_s': must be a number of seconds > 0 and at most 32000000000, got 0"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"replay\"\nretain_s = \"1h\"",
                "key 'subjects[0].retain_s': must be a number of seconds > 0"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"behavior\"\nvalue = inf",
                "key 'subjects[0].value': inf has no JSON form"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"stream\"",
                "key 'subjects[0].kind': must be one of \"subject\", \"replay\", \"behavior\", \"map\", got"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"map\"\nretain_s = 60",
                "key 'subjects[0].retain_s': only a replay subject takes retain_s (this one is map)"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"replay\"\nttl_s = 60",
                "key 'subjects[0].ttl_s': only a map takes ttl_s (this one is replay)"
            ),
            ("[[subjects]]\nname = \"a\"\nmax_keys = 6", "key 'subjects[0].max_keys': only a map takes max_keys"),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"map\"\nttl_s = -1",
                "key 'subjects[0].ttl_s': must be a number of seconds > 0"
            ),
            (
                "max_map_keys = 10\n[[subjects]]\nname = \"a\"\nkind = \"map\"\nmax_keys = 11",
                "key 'subjects[0].max_keys': must be an integer from 1 to 10 (max_map_keys), got 11"
            ),
            (
                "[[subjects]]\nname = \"a\"\nkind = \"map\"\nmax_keys = 2.5",
                "key 'subjects[0].max_keys': must be an integer from 1 to 100000"
            ),
            ("[[subjects]]\nname = \"a\"\nsize = 1", "key 'subjects[0].size': unknown key"),
            (
                "max_subjects = 1\n[[subjects]]\nname = \"a\"\n[[subjects]]\nname = \"b\"",
                "key 'subjects': 2 subjects exceed max_subjects (1)"
            ),
        ]
        for (toml, expected) in cases {
            let text = message(toml)
            #expect(
                text?.hasPrefix("config /etc/runnel/runneld.toml: \(expected)") == true,
                "\(toml) gave \(text ?? "no error")")
        }
    }

    @Test func syntaxErrorsGiveTheirPosition() throws {
        let text = try #require(message("max_depth = 3\nlisten = \n"))
        #expect(text.hasPrefix("config /etc/runnel/runneld.toml: line 2, column"))
        #expect(message("max_depth = 3\nmax_depth = 4")?.hasPrefix("config /etc/runnel/runneld.toml: line 2") == true)
        #expect(message("a = \"\u{0}\"")?.contains("NUL") == true)
    }

    @Test func commandLineOverridesNameTheOption() throws {
        var config = ServerConfig()
        #expect(throws: ConfigError.self) { try config.overrideListen("nowhere") }
        do {
            try config.overrideListen("1.2.3.4:x")
            Issue.record("no error")
        } catch {
            #expect(error.description.hasPrefix("command line: option '--listen': the port must be an integer"))
        }
        do {
            try config.overrideLogLevel("loud")
            Issue.record("no error")
        } catch {
            #expect(
                error.description
                    == "command line: option '--log-level': must be one of trace, debug, info, notice, warning, error, critical, got \"loud\""
            )
        }
        for bad in ["-1", "1025", "four", ""] {
            do {
                try config.overrideLoops(bad)
                Issue.record("no error for --loops \(bad)")
            } catch {
                #expect(
                    error.description
                        == "command line: option '--loops': must be an integer from 0 to 1024 (0: one per CPU), got \"\(bad)\""
                )
            }
        }
        #expect(config == ServerConfig())
        try config.overrideLoops("4")
        #expect(config.loops == 4)
        #expect(try ServerConfig.parse(toml: "loops = 2").loops == 2)
        #expect(ServerConfig().loops == 0)
    }
}
