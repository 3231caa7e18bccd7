import Foundation
import Testing

@testable import RunnelServer

/// The JWT keys of `runneld.toml`: secrets, PEM files and a JWKS file loaded when the file is
/// read (a bad one is an error naming its key), secrets never rendered, and a key file
/// rewritten under its old path counted as a change by a reload.
@Suite struct ConfigJWTTests {
    /// A directory of its own with `files` written into it, removed after `body`.
    static func withFiles(_ files: [String: String], _ body: (String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "runnel-jwt-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (name, text) in files {
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        try body(directory.path)
    }

    @Test func keysFromEverySourceAreLoaded() throws {
        try Self.withFiles(["rsa.pem": JWTFixtures.rsaPEM, "ec.pem": JWTFixtures.ecPEM, "keys.json": JWTFixtures.jwks])
        {
            directory in
            let config = try ServerConfig.parse(
                toml: """
                    jwt_secrets = ["\(JWTFixtures.secret)"]
                    jwt_public_keys = ["\(directory)/rsa.pem", "\(directory)/ec.pem"]
                    jwt_jwks_file = "\(directory)/keys.json"
                    jwt_issuer = "https://app.example"
                    jwt_audience = "runnel"
                    jwt_leeway = 30
                    """)
            #expect(config.jwtKeys.map(\.algorithm) == [.hs256, .rs256, .es256, .rs256, .es256])
            #expect(config.jwtKeys.map(\.id) == [nil, nil, nil, "r2", "e2"])
            #expect(
                config.jwtIssuer == "https://app.example" && config.jwtAudience == "runnel" && config.jwtLeeway == 30)
            #expect(config.renderedValue(of: .jwtSecrets) == "[1 secret(s), hidden]")
            #expect(!config.summaryLines.joined().contains(JWTFixtures.secret))
            #expect(ServerConfig().jwtLeeway == 5 && ServerConfig().jwtKeys.isEmpty)
        }
    }

    @Test func badKeysAreErrorsNamingTheirKey() throws {
        let shortSecret = #"jwt_secrets = ["short"]"#
        try Self.withFiles([
            "bad.pem": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
            "oct.json": #"{"keys":[{"kty":"oct","k":"AAAA"}]}"#,
            "alg.json": JWTFixtures.jwks.replacingOccurrences(
                of: #""kid": "e2""#, with: #""kid": "e2", "alg": "RS256""#),
            "curve.json": #"{"keys":[{"kty":"EC","crv":"P-384","x":"AA","y":"AA"}]}"#,
            "off.json":
                #"{"keys":[{"kty":"EC","crv":"P-256","x":"\#(String(repeating: "A", count: 43))","y":"\#(String(repeating: "A", count: 43))"}]}"#,
            "empty.json": #"{"keys":[]}"#,
        ]) { directory in
            let cases: [(String, String)] = [
                (shortSecret, "key 'jwt_secrets[0]': an HS256 secret must be at least 32 bytes (it has 5)"),
                (
                    #"jwt_public_keys = ["\#(directory)/none.pem"]"#,
                    "key 'jwt_public_keys[0]': \"\(directory)/none.pem\": cannot read"
                ),
                (
                    #"jwt_public_keys = ["\#(directory)/bad.pem"]"#,
                    "key 'jwt_public_keys[0]': \"\(directory)/bad.pem\": no PEM public key"
                ),
                (#"jwt_jwks_file = "\#(directory)/oct.json""#, "keys[0]: kty oct is not RSA or EC"),
                (
                    #"jwt_jwks_file = "\#(directory)/alg.json""#,
                    "keys[1]: alg RS256 does not match the key (it serves ES256)"
                ),
                (#"jwt_jwks_file = "\#(directory)/curve.json""#, "keys[0]: crv P-384 is not P-256"),
                (#"jwt_jwks_file = "\#(directory)/off.json""#, "keys[0]: x and y are not a point of P-256"),
                (#"jwt_jwks_file = "\#(directory)/empty.json""#, "holds no key"),
                (#"jwt_jwks_file = "\#(directory)/bad.pem""#, "not a JWKS"),
                ("jwt_leeway = 3601", "key 'jwt_leeway': must be an integer between 0 and 3600"),
                ("jwt_public_keys = \"one.pem\"", "key 'jwt_public_keys': must be an array"),
            ]
            for (toml, expected) in cases {
                do {
                    _ = try ServerConfig.parse(toml: toml)
                    Issue.record("\(toml) was accepted")
                } catch {
                    #expect("\(error)".contains(expected), "\(error)")
                }
            }
        }
    }

    @Test func aKeyFileRewrittenUnderItsPathIsAChange() throws {
        try Self.withFiles(["key.pem": JWTFixtures.rsaPEM]) { directory in
            let toml = #"jwt_public_keys = ["\#(directory)/key.pem"]"#
            let before = try ServerConfig.parse(toml: toml)
            #expect(try ServerConfig.parse(toml: toml).changes(from: before).isEmpty)
            try JWTFixtures.ecPEM.write(toFile: "\(directory)/key.pem", atomically: true, encoding: .utf8)
            let after = try ServerConfig.parse(toml: toml)
            #expect(after.changes(from: before).map(\.key) == ["jwt_public_keys"])
            #expect(!after.verifiesJWTsAs(before))
        }
    }
}
