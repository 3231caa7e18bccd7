import Testing

/// `auth` and `unauthorized` with configured tokens.
@Suite struct AuthTests {
    private func server() throws -> RunneldProcess {
        var config = RunneldConfig()
        config.authTokens = ["tok-1", "tok-2"]
        return try RunneldProcess(config: config)
    }

    @Test func everyRequestBeforeAuthIsUnauthorized() throws {
        let server = try server()
        let client = try server.connect()
        try client.expectFailure(#"{"op":"ping","ref":1}"#, code: "unauthorized", ref: 1)
        try client.expectFailure(#"{"op":"sub","subject":"au","sid":"s","ref":2}"#, code: "unauthorized", ref: 2)
        try client.expectFailure(#"{"op":"stats","ref":3}"#, code: "unauthorized", ref: 3)
        // pub without ref fails, so it is answered.
        try client.expectFailure(#"{"op":"pub","subject":"au","value":1}"#, code: "unauthorized", ref: nil)
    }

    @Test func wrongTokenFailsRightTokenAuthorizes() throws {
        let server = try server()
        let client = try server.connect()
        try client.expectFailure(#"{"op":"auth","token":"nope","ref":1}"#, code: "unauthorized", ref: 1)
        try client.expectFailure(#"{"op":"ping","ref":2}"#, code: "unauthorized", ref: 2)
        #expect(try client.request(#"{"op":"auth","token":"tok-2","ref":3}"#) == ["ok": true, "ref": 3])
        #expect(try client.request(#"{"op":"ping","ref":4}"#) == ["ok": true, "ref": 4])
        #expect(try client.publish("au", 1) == 0)

        // Authorization belongs to the connection.
        let other = try server.connect()
        try other.expectFailure(#"{"op":"ping","ref":5}"#, code: "unauthorized", ref: 5)
        #expect(try other.request(#"{"op":"auth","token":"tok-1","ref":6}"#) == ["ok": true, "ref": 6])
    }

    /// Near misses fail like any wrong token (the comparison is constant-time; see
    /// ConstantTimeTests for the comparison itself).
    @Test func prefixesAndExtensionsOfATokenAreRefused() throws {
        let server = try server()
        let client = try server.connect()
        for (ref, guess) in ["tok-", "tok-12", "tok-1 ", "TOK-1", "tok-3", "tok-1tok-1"].enumerated() {
            let line = #"{"op":"auth","token":"\#(guess)","ref":\#(ref)}"#
            try client.expectFailure(line, code: "unauthorized", ref: .number(Double(ref)))
        }
        #expect(try client.request(#"{"op":"auth","token":"tok-1","ref":9}"#) == ["ok": true, "ref": 9])
    }

    @Test func unauthorizedRequestsHaveNoEffect() throws {
        let server = try server()
        let intruder = try server.connect()
        try intruder.expectFailure(
            #"{"op":"create","subject":"au.x","kind":"subject","ref":1}"#, code: "unauthorized", ref: 1)
        let client = try server.connect()
        try client.expectOK(["op": "auth", "token": "tok-1"])
        #expect(try client.list().isEmpty)
    }
}
