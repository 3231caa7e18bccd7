import Testing

@testable import RunnelServer

/// `[[tokens]]`: what is read, the defaults (nothing not given), and the errors, each naming
/// its table's index.
@Suite struct ConfigTokensTests {
    private func problem(_ toml: String) -> String? {
        do {
            _ = try ServerConfig.parse(toml: toml)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func tablesAreReadWithTheirRights() throws {
        let digest = String(repeating: "ab", count: 32)
        let config = try ServerConfig.parse(
            toml: """
                [[tokens]]
                token = "dash"
                subscribe = ["sensors.>", "alerts"]
                [[tokens]]
                sha256 = "\(digest)"
                publish = ["orders.*"]
                subscribe = ["orders.*"]
                manage = true
                """)
        #expect(
            config.tokens == [
                TokenDefinition(secret: .token("dash"), subscribe: ["sensors.>", "alerts"]),
                TokenDefinition(
                    secret: .sha256(digest), publish: ["orders.*"], subscribe: ["orders.*"], manage: true),
            ])
        #expect(config.renderedValue(of: .tokens) == "[2 token table(s), hidden]")
        #expect(!config.summaryLines.joined().contains("dash"))
        #expect(ServerConfig().renderedValue(of: .tokens) == "[]")
    }

    @Test func badTablesAreErrorsNamingTheirIndex() {
        let good = "[[tokens]]\ntoken = \"a\"\n"
        let cases: [(String, String)] = [
            (good + "[[tokens]]\npublish = [\"x\"]", "key 'tokens[1]': needs token"),
            (
                good + "[[tokens]]\ntoken = \"b\"\nsha256 = \"\(String(repeating: "0", count: 64))\"",
                "key 'tokens[1]': has both token and sha256"
            ),
            ("[[tokens]]\nsha256 = \"abc\"", "key 'tokens[0].sha256': must be 64 hex digits"),
            ("[[tokens]]\nsha256 = \"\(String(repeating: "z", count: 64))\"", "key 'tokens[0].sha256': must be 64 hex"),
            ("[[tokens]]\ntoken = \"\"", "key 'tokens[0].token': must be a non-empty string"),
            (good + "[[tokens]]\ntoken = \"b\"\nsubscribe = [\"ok\", \"a*\"]", "key 'tokens[1].subscribe[1]':"),
            ("[[tokens]]\ntoken = \"b\"\npublish = [\"a.>.b\"]", "key 'tokens[0].publish[0]':"),
            ("[[tokens]]\ntoken = \"b\"\npublish = \"a\"", "key 'tokens[0].publish': must be an array"),
            ("[[tokens]]\ntoken = \"b\"\nmanage = \"yes\"", "key 'tokens[0].manage': must be true or false"),
            ("[[tokens]]\ntoken = \"b\"\nread = [\"a\"]", "key 'tokens[0].read': unknown key"),
            ("tokens = [\"a\"]", "key 'tokens[0]': must be a table"),
            (good + "[[tokens]]\ntoken = \"a\"", "key 'tokens[1]': the same token as tokens[0]"),
            (
                "auth_tokens = [\"x\", \"abc\"]\n[[tokens]]\nsha256 = \"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"",
                "key 'tokens[0]': the same token as auth_tokens[1]"
            ),
        ]
        for (toml, expected) in cases {
            let found = problem(toml)
            #expect(found?.contains(expected) == true, "\(toml) -> \(found ?? "no error")")
        }
    }

    @Test func changedTokensAreALiveChangeThatShowsNoSecret() throws {
        let old = try ServerConfig.parse(toml: "[[tokens]]\ntoken = \"s3cret\"\nsubscribe = [\"a\"]")
        let new = try ServerConfig.parse(toml: "[[tokens]]\ntoken = \"s3cret\"\nsubscribe = [\"a\", \"b\"]")
        let changes = new.changes(from: old)
        #expect(changes.map(\.key) == ["tokens"] && changes[0].applicability == .live)
        #expect(!changes[0].description.contains("s3cret"))
        #expect(old.changes(from: old).isEmpty)
    }
}
