import RunnelCrypto
import Testing

@testable import RunnelServer

/// The JWT verifier (`AccessList.authenticate` with JWT keys) on tokens PyJWT signed
/// (`JWTFixtures`): each algorithm and key source, each check's refusal and its message, `kid`,
/// malformed input, and the grant a token's `runnel` claim gives.
@Suite struct JWTVerifierTests {
    /// Between the fixtures' `nbf` and `exp`.
    static let valid = 1_500_000_000.0

    static func access(issuer: String? = "https://app.example", audience: String? = "runnel", leeway: Int = 5)
        throws -> AccessList
    {
        var config = ServerConfig()
        config.jwtKeys = [
            try JWTKey(secret: Array(JWTFixtures.secret.utf8), source: "jwt_secrets[0]"),
            try JWTKey(pem: Array(JWTFixtures.rsaPEM.utf8), source: "jwt_public_keys[0]"),
            try JWTKey(pem: Array(JWTFixtures.ecPEM.utf8), source: "jwt_public_keys[1]"),
        ]
        config.jwtKeys += try JWKSFile.keys(in: JWTFixtures.jwks, source: "jwt_jwks_file").get()
        config.jwtIssuer = issuer
        config.jwtAudience = audience
        config.jwtLeeway = leeway
        return AccessList(config: config)
    }

    /// The refusal's message; nil when the token is accepted.
    static func refusal(_ token: String, at now: Double = valid, _ access: AccessList? = nil) throws -> String? {
        let list = try access ?? Self.access()
        switch list.authenticate(token, at: now) {
        case .success: return nil
        case .failure(let error):
            #expect(error.code == .unauthorized)
            return error.message
        }
    }

    @Test func eachAlgorithmAndKeySourceIsAccepted() throws {
        let access = try Self.access()
        #expect(access.openGrant == nil)
        for token in [
            JWTFixtures.hs256, JWTFixtures.rs256, JWTFixtures.es256, JWTFixtures.rs256JWKS, JWTFixtures.es256JWKS,
        ] {
            let grant = try access.authenticate(token, at: Self.valid).get()
            #expect(grant.publish.permits("chat.a") && !grant.publish.permits("news"))
            #expect(grant.subscribe.permits("chat.a.b") && grant.subscribe.permits("news") && grant.mayManage)
            #expect(grant.source == "JWT sub=alice" && grant.digest == nil)
            #expect(grant.jwt?.closesAt == 2_000_000_005 && grant.jwt?.subject == "alice" && grant.jwt?.token == token)
        }
    }

    @Test func anAbsentRightsClaimGrantsNothing() throws {
        let grant = try Self.access().authenticate(JWTFixtures.noRights, at: Self.valid).get()
        #expect(!grant.publish.permits("a") && !grant.subscribe.permits("a") && !grant.mayManage)
        #expect(grant.source == "JWT" && grant.jwt?.subject == nil)
    }

    @Test func signaturesByOtherKeysAndConfusedAlgorithmsAreRefused() throws {
        #expect(try Self.refusal(JWTFixtures.rs256OtherKey) == "JWT signature does not verify")
        // An HMAC keyed with the RSA public key's PEM: HS256 is served by the secrets alone.
        #expect(try Self.refusal(JWTFixtures.hs256WithRSAPublicKey) == "JWT signature does not verify")
        #expect(try Self.refusal(JWTFixtures.algNone) == "JWT alg none is never accepted")
        #expect(try Self.refusal(JWTFixtures.hs512) == "JWT alg HS512 is not supported (HS256, RS256, ES256)")
        // A kid no key carries falls back to the keys that carry none, which did not sign it.
        #expect(try Self.refusal(JWTFixtures.rs256UnknownKid) == "JWT signature does not verify")
        // A signature from another token, or cut short.
        let parts = JWTFixtures.es256.split(separator: ".")
        let otherSignature = JWTFixtures.es256JWKS.split(separator: ".")[2]
        #expect(try Self.refusal("\(parts[0]).\(parts[1]).\(otherSignature)") == "JWT signature does not verify")
        #expect(try Self.refusal("\(parts[0]).\(parts[1]).AAAA") == "JWT signature does not verify")
    }

    @Test func aTokenOfAnAlgorithmWithoutKeysIsRefused() throws {
        var config = ServerConfig()
        config.jwtKeys = [try JWTKey(secret: Array(JWTFixtures.secret.utf8), source: "jwt_secrets[0]")]
        let access = AccessList(config: config)
        #expect(try Self.refusal(JWTFixtures.rs256, access) == "no key for JWT alg RS256")
        #expect(try Self.refusal(JWTFixtures.es256JWKS, access) == "no key for JWT alg ES256 with kid e2")
        #expect(try Self.refusal(JWTFixtures.hs256, access) == nil)
    }

    @Test func timesAreCheckedWithinTheLeeway() throws {
        #expect(try Self.refusal(JWTFixtures.hs256, at: 2_000_000_004.9) == nil)
        #expect(try Self.refusal(JWTFixtures.hs256, at: 2_000_000_005) == "JWT expired")
        #expect(try Self.refusal(JWTFixtures.hs256, at: 999_999_995) == nil)
        #expect(try Self.refusal(JWTFixtures.hs256, at: 999_999_994) == "JWT not yet valid (nbf)")
        let strict = try Self.access(leeway: 0)
        #expect(try Self.refusal(JWTFixtures.hs256, at: 2_000_000_000, strict) == "JWT expired")
        #expect(try Self.refusal(JWTFixtures.hs256, at: 999_999_999, strict) == "JWT not yet valid (nbf)")
    }

    @Test func issuerAndAudienceAreCheckedWhenConfigured() throws {
        #expect(try Self.refusal(JWTFixtures.wrongIssuer) == "JWT issuer does not match jwt_issuer")
        #expect(try Self.refusal(JWTFixtures.wrongAudience) == "JWT audience does not match jwt_audience")
        let open = try Self.access(issuer: nil, audience: nil)
        #expect(try Self.refusal(JWTFixtures.wrongIssuer, open) == nil)
        #expect(try Self.refusal(JWTFixtures.wrongAudience, open) == nil)
    }

    @Test func malformedTokensSayWhatIsWrong() throws {
        let cases: [(String, String)] = [
            (JWTFixtures.noExp, "malformed JWT: exp is missing or not a number"),
            (JWTFixtures.badRights, "malformed JWT: runnel.publish[0]: "),
            (JWTFixtures.unknownRight, "malformed JWT: runnel.read is not a right (publish, subscribe, manage)"),
            (JWTFixtures.crit, "malformed JWT: crit header parameters are not supported"),
            ("abc.def.ghi", "malformed JWT: the header is not a JSON object"),
            ("a.b.c", "malformed JWT: the header is not base64url"),
            ("a+b.c.d", "malformed JWT: the header is not base64url"),
            ("..", "malformed JWT: the header is not a JSON object"),
            ("e30.e30.", "malformed JWT: the header has no alg"),
            ("eyJhbGciOjF9.e30.", "malformed JWT: the header has no alg"),
        ]
        for (token, expected) in cases {
            let message = try Self.refusal(token)
            #expect(message?.hasPrefix(expected) == true, "\(token): \(message ?? "accepted")")
        }
        let parts = JWTFixtures.hs256.split(separator: ".")
        #expect(
            try Self.refusal("\(parts[0]).\(parts[1]).\(parts[2])=") == "malformed JWT: the signature is not base64url")
    }

    @Test func configuredTokensComeFirstAndOtherTokensAreRefused() throws {
        var config = try ServerConfig.parse(toml: #"auth_tokens = ["a.b.c"]"#)
        #expect(try Self.refusal("a.b.c", AccessList(config: config)) == nil)
        #expect(
            try Self.refusal(JWTFixtures.hs256, AccessList(config: config))
                == "invalid token (no JWT keys are configured)")
        #expect(try Self.refusal("plain", AccessList(config: config)) == "invalid token")
        config.jwtKeys = [try JWTKey(secret: Array(JWTFixtures.secret.utf8), source: "jwt_secrets[0]")]
        #expect(try Self.refusal(JWTFixtures.hs256, AccessList(config: config)) == nil)
        // JWT keys alone mean tokens are needed.
        config.authTokens = []
        #expect(AccessList(config: config).openGrant == nil)
    }

    @Test func aReloadVerifiesAJWTAgain() throws {
        let grant = try Self.access().authenticate(JWTFixtures.rs256, at: Self.valid).get()
        #expect((try? Self.access().successor(of: grant, at: Self.valid).get())?.jwt?.token == JWTFixtures.rs256)
        var rotated = ServerConfig()
        rotated.jwtKeys = [try JWTKey(pem: Array(JWTFixtures.ecPEM.utf8), source: "jwt_public_keys[0]")]
        guard case .failure(let reason) = AccessList(config: rotated).successor(of: grant, at: Self.valid) else {
            Issue.record("a token whose key was taken out still verifies")
            return
        }
        #expect(reason.message == "the token no longer verifies (configuration reloaded): no key for JWT alg RS256")
        guard case .failure(let gone) = AccessList(config: ServerConfig()).successor(of: grant, at: Self.valid) else {
            Issue.record("a JWT outlived the JWT keys")
            return
        }
        #expect(gone.message == "JWTs are no longer accepted (configuration reloaded)")
    }
}
