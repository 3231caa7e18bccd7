import RunnelCrypto
import RunnelProtocol
import Testing

@testable import RunnelServer

/// Pattern matching as permissions use it: names against patterns, and patterns against
/// patterns (`covers`, `overlaps`), which decide whether a pattern subscription is let in,
/// filtered, or refused.
@Suite struct SubjectRightsTests {
    @Test func namesMatchPatternsTokenByToken() {
        let cases: [(String, String, Bool)] = [
            ("orders.eu", "orders.eu", true), ("orders.eu", "orders.us", false), ("orders.eu", "orders", false),
            ("orders", "orders.eu", false), ("orders.*", "orders.eu", true), ("orders.*", "orders.eu.x", false),
            ("orders.*", "orders", false), ("orders.>", "orders.eu.x", true), ("orders.>", "orders", false),
            ("*.eu", "orders.eu", true), ("*.eu", "eu", false), (">", "a", true), (">", "a.b.c", true),
            ("a.*.c", "a.b.c", true), ("a.*.c", "a.b.d", false), ("ab", "a", false), ("a", "ab", false),
        ]
        for (pattern, name, expected) in cases {
            #expect(SubjectPattern(pattern).matches(name) == expected, "\(pattern) ~ \(name)")
        }
    }

    @Test func aPatternCoversAnotherWhenEveryNameOfTheOtherMatchesIt() {
        let cases: [(String, String, Bool)] = [
            (">", "a.*", true), ("a.>", "a.*", true), ("a.>", "a.b.>", true), ("a.>", "a.>", true),
            ("a.*", "a.>", false), ("a.*", "a.b", true), ("a.*", "*.b", false), ("a.b", "a.*", false),
            ("*.*", "a.*", true), ("a.>", "*.b", false), ("a.*.c", "a.*.c", true), ("a.*", "a.*.c", false),
        ]
        for (mine, theirs, expected) in cases {
            #expect(SubjectPattern(mine).covers(SubjectPattern(theirs)) == expected, "\(mine) covers \(theirs)")
        }
    }

    @Test func patternsOverlapWhenSomeNameMatchesBoth() {
        let cases: [(String, String, Bool)] = [
            ("a.>", "*.b", true), ("a.*", "b.*", false), ("a.*", "*.b", true), ("a.*", "a.b.c", false),
            (">", "x", true), ("a.>", "a", false), ("a.b", "a.b", true), ("a.*.c", "a.b.>", true),
            ("a.*.c", "a.b.d", false),
        ]
        for (mine, theirs, expected) in cases {
            #expect(SubjectPattern(mine).overlaps(SubjectPattern(theirs)) == expected, "\(mine) ~ \(theirs)")
            #expect(SubjectPattern(theirs).overlaps(SubjectPattern(mine)) == expected, "\(theirs) ~ \(mine)")
        }
    }

    @Test func theLiteralPrefixIsWhatEveryMatchStartsWith() {
        #expect(SubjectPattern("sensors.*.temp").literalPrefix == "sensors.")
        #expect(SubjectPattern("a.b.>").literalPrefix == "a.b.")
        #expect(SubjectPattern("*.x").literalPrefix == "")
        #expect(SubjectPattern("a.b").literalPrefix == "a.b")
    }

    @Test func rightsAreAListOfPatternsOrEverything() {
        let rights = SubjectRights(["orders.eu", "sensors.>"])
        #expect(rights.permits("orders.eu") && rights.permits("sensors.a.b"))
        #expect(!rights.permits("orders.us") && !rights.permits("sensors"))
        #expect(rights.covers(SubjectPattern("sensors.*")) && !rights.covers(SubjectPattern("orders.*")))
        #expect(rights.overlaps(SubjectPattern("orders.*")) && !rights.overlaps(SubjectPattern("logs.>")))
        #expect(!SubjectRights.nothing.permits("a") && !SubjectRights([]).overlaps(SubjectPattern(">")))
        #expect(SubjectRights([">"]).coversEverything && SubjectRights.everything.covers(SubjectPattern("a.>")))
    }

    @Test func theSHA256OfATokenIsTheStandardOne() {
        // `printf abc | sha256sum`
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        #expect(TokenDigest.of("abc") == TokenDigest.parse(hex: abc))
        #expect(TokenDigest.parse(hex: abc.uppercased()) == TokenDigest.parse(hex: abc))
        #expect(TokenDigest.parse(hex: String(abc.dropLast())) == nil)
        #expect(TokenDigest.parse(hex: String(abc.dropLast()) + "g") == nil)
    }

    @Test func anOfferedTokenFindsItsGrantWhicheverWayItIsConfigured() throws {
        let hashed = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        let config = try ServerConfig.parse(
            toml: """
                auth_tokens = ["admin"]
                [[tokens]]
                token = "reader"
                subscribe = ["a.>"]
                [[tokens]]
                sha256 = "\(hashed)"
                publish = ["a.b"]
                """)
        let access = AccessList(config: config)
        #expect(access.openGrant == nil && access.grants.count == 3)
        let admin = try #require(access.grant(for: "admin"))
        #expect(admin.mayManage && admin.publish.coversEverything && admin.subscribe.coversEverything)
        let reader = try #require(access.grant(for: "reader"))
        #expect(!reader.mayManage && reader.subscribe.permits("a.x") && !reader.publish.permits("a.x"))
        let writer = try #require(access.grant(for: "abc"))
        #expect(writer.publish.permits("a.b") && !writer.subscribe.permits("a.b") && writer.source == "tokens[1]")
        #expect(access.grant(for: hashed) == nil)
        #expect(access.grant(for: "") == nil && access.grant(for: "reade") == nil)

        // A reload's list hands each token its new grant; a removed one has none.
        let reloaded = AccessList(
            config: try ServerConfig.parse(toml: "[[tokens]]\ntoken = \"reader\"\nsubscribe = [\">\"]"))
        #expect((try? reloaded.successor(of: reader, at: 0).get())?.subscribe.coversEverything == true)
        for gone in [admin, writer] {
            guard case .failure(let reason) = reloaded.successor(of: gone, at: 0) else {
                Issue.record("\(gone.source) outlived its removal")
                continue
            }
            #expect(reason.message == "the token was removed from the configuration")
        }
        // Without tokens everyone has the open grant, which a list with tokens ends.
        let open = AccessList(config: ServerConfig())
        let anyone = try open.authenticate("whatever", at: 0).get()
        #expect(anyone === open.openGrant && anyone.mayManage)
        #expect((try? reloaded.successor(of: anyone, at: 0).get()) == nil)
        #expect((try? open.successor(of: anyone, at: 0).get()) === open.openGrant)
    }
}
