import Testing

@testable import RunnelServer

/// Per-token rights over a session's requests, whatever carries it (the wire tests in
/// `Tests/blackbox/test_permissions.py` run them over TCP, WebSocket, SSE and HTTP): each right on
/// each request, pattern subscriptions meeting subjects they may not read, stages reaching
/// subjects at `sub` time and at run time, reloads that grant and revoke, and a second `auth`.
@Suite struct SessionPermissionTests {
    static let toml = """
        auth_tokens = ["admin"]
        [[tokens]]
        token = "reader"
        subscribe = ["sensors.>", "alerts"]
        [[tokens]]
        token = "writer"
        publish = ["sensors.*"]
        [[tokens]]
        token = "manager"
        manage = true
        """

    private func harness(_ toml: String = Self.toml) throws -> SessionHarness {
        let config = try ServerConfig.parse(toml: toml)
        return SessionHarness { $0 = config }
    }

    private func client(_ harness: SessionHarness, token: String) -> SessionClient {
        let client = harness.connect()
        #expect(client.send(#"{"op":"auth","token":"\#(token)"}"#) == [#"{"ok":true}"#])
        return client
    }

    private func refusal(_ message: String, ref: Int = 1, stage: Int? = nil) -> String {
        let stageMember = stage.map { #","stage":\#($0)"# } ?? ""
        return #"{"ok":false,"ref":\#(ref),"code":"unauthorized","message":"\#(message)"\#(stageMember)}"#
    }

    @Test func eachRequestNeedsItsRight() throws {
        let harness = try harness()
        let admin = client(harness, token: "admin")
        let reader = client(harness, token: "reader")
        let writer = client(harness, token: "writer")
        let manager = client(harness, token: "manager")

        #expect(
            reader.send(#"{"op":"pub","subject":"sensors.a","value":1,"ref":1}"#) == [
                refusal("token may not publish to sensors.a")
            ])
        #expect(
            writer.send(#"{"op":"pub","subject":"sensors.a.b","value":1,"ref":1}"#) == [
                refusal("token may not publish to sensors.a.b")
            ])
        #expect(
            writer.send(#"{"op":"pub","subject":"sensors.a","value":1,"ref":1}"#) == [
                #"{"ok":true,"ref":1,"receivers":0}"#
            ])
        #expect(
            writer.send(#"{"op":"sub","subject":"sensors.a","ref":1}"#) == [
                refusal("token may not subscribe to sensors.a")
            ])
        #expect(
            reader.send(#"{"op":"sub","subject":"orders","ref":1}"#) == [refusal("token may not subscribe to orders")])
        #expect(
            reader.send(#"{"op":"sub","subject":"alerts","sid":"x","ref":1}"#) == [#"{"ok":true,"ref":1,"sid":"x"}"#])
        for (op, extra, right) in [
            ("create", #","kind":"replay""#, "create subjects"), ("complete", "", "complete subjects"),
            ("error", #","message":"m""#, "error subjects"), ("delete", "", "delete subjects"),
        ] {
            let request = #"{"op":"\#(op)","subject":"sensors.a"\#(extra),"ref":1}"#
            for client in [reader, writer] {
                #expect(client.send(request) == [refusal("token may not \(right) (it lacks manage)")])
            }
        }
        #expect(
            reader.send(#"{"op":"stats","ref":1}"#) == [
                refusal("token may not read the server's stats (it lacks manage)")
            ])
        #expect(manager.send(#"{"op":"stats"}"#).first?.hasPrefix(#"{"ok":true,"connections":"#) == true)
        #expect(manager.send(#"{"op":"create","subject":"b","kind":"subject","ref":1}"#) == [#"{"ok":true,"ref":1}"#])
        #expect(manager.send(#"{"op":"pub","subject":"b","ref":1}"#) == [refusal("token may not publish to b")])
        // A refused `pub` creates nothing; `list` shows only what the token may read or publish to.
        writer.send(#"{"op":"pub","subject":"orders.new","value":1}"#)
        admin.send(#"{"op":"pub","subject":"sensors.z.deep","value":1}"#)
        let names = { (client: SessionClient) -> [String] in
            let reply = client.send(#"{"op":"list"}"#)[0]
            return reply.split(separator: "\"subject\":\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
        }
        #expect(names(admin) == ["alerts", "b", "sensors.a", "sensors.z.deep"])
        #expect(names(reader) == ["alerts", "sensors.a", "sensors.z.deep"])
        #expect(names(writer) == ["sensors.a"])
        #expect(names(manager) == [])
    }

    @Test func aPatternSubscriptionReceivesOnlySubjectsTheTokenMayRead() throws {
        let harness = try harness()
        let admin = client(harness, token: "admin")
        let reader = client(harness, token: "reader")
        admin.send(#"{"op":"create","subject":"orders.x","kind":"behavior","value":"secret"}"#)
        admin.send(#"{"op":"create","subject":"sensors.x","kind":"behavior","value":"ok"}"#)
        #expect(
            reader.send(#"{"op":"sub","subject":">","sid":"p"}"#) == [
                #"{"ok":true,"sid":"p"}"#, #"{"ev":"next","sid":"p","subject":"sensors.x","value":"ok"}"#,
            ])
        // Subjects created later are filtered as they appear.
        admin.send(
            #"{"op":"pub","subject":"orders.y","value":1}"#, #"{"op":"pub","subject":"sensors.y","value":2}"#,
            #"{"op":"pub","subject":"alerts","value":3}"#, #"{"op":"pub","subject":"orders.x","value":4}"#)
        #expect(
            reader.lines() == [
                #"{"ev":"next","sid":"p","subject":"sensors.y","value":2}"#,
                #"{"ev":"next","sid":"p","subject":"alerts","value":3}"#,
            ])
        // A pattern it may read none of is refused; one it may read all of is not filtered.
        #expect(
            reader.send(#"{"op":"sub","subject":"orders.*","ref":1}"#) == [
                refusal("token may not subscribe to any subject matching orders.*")
            ])
        #expect(
            reader.send(#"{"op":"sub","subject":"sensors.*","sid":"s"}"#) == [
                #"{"ok":true,"sid":"s"}"#, #"{"ev":"next","sid":"s","subject":"sensors.x","value":"ok"}"#,
            ])
    }

    @Test func stagesReachOnlySubjectsTheTokenMayRead() throws {
        let harness = try harness()
        let admin = client(harness, token: "admin")
        let reader = client(harness, token: "reader")
        for (index, stage) in [
            #"{"op":"merge","subjects":["alerts","orders"]}"#, #"{"op":"zipWith","subject":"orders"}"#,
            #"{"op":"combineLatestWith","subject":"orders"}"#, #"{"op":"takeUntil","subject":"orders"}"#,
        ].enumerated() {
            let request = #"{"op":"sub","subject":"alerts","ref":1,"ops":[{"op":"take","count":5},\#(stage)]}"#
            #expect(reader.send(request) == [refusal("token may not subscribe to orders", stage: 1)], "\(index)")
        }
        // At run time the stage's subscription ends with `unauthorized`; the connection goes on.
        for op in ["flattenMap", "switchToLatest"] {
            let expr = op == "flattenMap" ? #","expr":".""# : ""
            reader.send(#"{"op":"sub","subject":"sensors.names","sid":"\#(op)","ops":[{"op":"\#(op)"\#(expr)}]}"#)
        }
        admin.send(
            #"{"op":"pub","subject":"sensors.names","value":"alerts"}"#, #"{"op":"pub","subject":"alerts","value":1}"#)
        #expect(reader.lines().count == 2)
        admin.send(#"{"op":"pub","subject":"sensors.names","value":"orders"}"#)
        let ended = reader.lines()
        for op in ["flattenMap", "switchToLatest"] {
            #expect(
                ended.contains(
                    #"{"ev":"error","sid":"\#(op)","code":"unauthorized","message":"token may not subscribe to orders","stage":0}"#
                ), "\(ended)")
        }
        #expect(reader.send(#"{"op":"ping"}"#) == [#"{"ok":true}"#])
    }

    @Test func aReloadGrantsAndRevokesOnOpenConnections() throws {
        let harness = try harness()
        let admin = client(harness, token: "admin")
        let reader = client(harness, token: "reader")
        let writer = client(harness, token: "writer")
        reader.send(
            #"{"op":"sub","subject":"sensors.a","sid":"a"}"#, #"{"op":"sub","subject":"alerts","sid":"b"}"#,
            #"{"op":"sub","subject":">","sid":"p"}"#,
            #"{"op":"sub","subject":"alerts","sid":"m","ops":[{"op":"merge","subjects":["sensors.b"]}]}"#)
        admin.send(#"{"op":"pub","subject":"sensors.c","value":0}"#)
        #expect(reader.lines().count == 1)
        #expect(
            writer.send(#"{"op":"pub","subject":"alerts","ref":1}"#) == [refusal("token may not publish to alerts")])

        // The reader loses sensors.>, the writer gains alerts; the manager's token goes.
        let narrower = try ServerConfig.parse(
            toml: """
                auth_tokens = ["admin"]
                [[tokens]]
                token = "reader"
                subscribe = ["alerts", "sensors.a"]
                [[tokens]]
                token = "writer"
                publish = ["sensors.*", "alerts"]
                """)
        let manager = client(harness, token: "manager")
        harness.run { _ = harness.server.reload(narrower) }
        let reason = "(permissions changed by a reload)"
        // The pattern had joined sensors.b (which the merge stage created) and sensors.c; the
        // message names the first by name.
        #expect(
            Set(reader.lines()) == [
                #"{"ev":"error","sid":"p","code":"unauthorized","message":"token may no longer subscribe to sensors.b \#(reason)"}"#,
                #"{"ev":"error","sid":"m","code":"unauthorized","message":"token may no longer subscribe to sensors.b \#(reason)"}"#,
            ])
        #expect(
            manager.lines() == [
                #"{"ev":"closing","code":"unauthorized","message":"the token was removed from the configuration"}"#
            ])
        #expect(manager.transport.closeRequested)
        // What the new rights allow goes on, and new requests get them.
        #expect(
            writer.send(#"{"op":"pub","subject":"alerts","value":5,"ref":1}"#) == [
                #"{"ok":true,"ref":1,"receivers":1}"#
            ])
        #expect(reader.lines() == [#"{"ev":"next","sid":"b","value":5}"#])
        #expect(
            reader.send(#"{"op":"sub","subject":"sensors.c","ref":1}"#) == [
                refusal("token may not subscribe to sensors.c")
            ])
        #expect(admin.send(#"{"op":"ping"}"#) == [#"{"ok":true}"#])
    }

    @Test func aPatternTheOldRightsCoveredIsFilteredByTheNewOnes() throws {
        let harness = try harness()
        let admin = client(harness, token: "admin")
        let reader = client(harness, token: "reader")
        reader.send(#"{"op":"sub","subject":"sensors.*","sid":"p"}"#)
        admin.send(#"{"op":"pub","subject":"sensors.a","value":1}"#)
        #expect(reader.lines() == [#"{"ev":"next","sid":"p","subject":"sensors.a","value":1}"#])
        let narrower = "[[tokens]]\ntoken = \"reader\"\nsubscribe = [\"sensors.a\", \"sensors.b\"]"
        harness.run { _ = harness.server.reload(try! ServerConfig.parse(toml: narrower + "\n" + Self.admin)) }
        // Nothing it joined is forbidden now, so it goes on; subjects created later are filtered.
        admin.send(
            #"{"op":"pub","subject":"sensors.c","value":2}"#, #"{"op":"pub","subject":"sensors.b","value":3}"#,
            #"{"op":"pub","subject":"sensors.a","value":4}"#)
        #expect(
            reader.lines() == [
                #"{"ev":"next","sid":"p","subject":"sensors.b","value":3}"#,
                #"{"ev":"next","sid":"p","subject":"sensors.a","value":4}"#,
            ])
    }

    private static let admin = "[[tokens]]\ntoken = \"admin\"\npublish = [\">\"]\nsubscribe = [\">\"]\nmanage = true"

    @Test func aSecondAuthMovesTheSessionToTheNewTokensRights() throws {
        let harness = try harness()
        let client = client(harness, token: "admin")
        #expect(client.send(#"{"op":"sub","subject":"sensors.a","sid":"s"}"#) == [#"{"ok":true,"sid":"s"}"#])
        #expect(client.send(#"{"op":"sub","subject":"orders","sid":"o"}"#) == [#"{"ok":true,"sid":"o"}"#])
        #expect(
            client.send(#"{"op":"auth","token":"reader","ref":1}"#) == [
                #"{"ev":"error","sid":"o","code":"unauthorized","message":"token may no longer subscribe to orders (the connection authenticated again)"}"#,
                #"{"ok":true,"ref":1}"#,
            ])
        // A refused token changes nothing: the reader's rights stay.
        #expect(client.send(#"{"op":"auth","token":"nobody","ref":2}"#) == [refusal("invalid token", ref: 2)])
        #expect(
            client.send(#"{"op":"create","subject":"x","ref":1}"#) == [
                refusal("token may not create subjects (it lacks manage)")
            ])
    }

    @Test func tokensAddedToAnOpenServerCloseAnonymousConnections() throws {
        let harness = SessionHarness()
        let anonymous = harness.connect()
        #expect(anonymous.send(#"{"op":"ping"}"#) == [#"{"ok":true}"#])
        harness.run { _ = harness.server.reload(try! ServerConfig.parse(toml: "auth_tokens = [\"t\"]")) }
        #expect(
            anonymous.lines() == [
                #"{"ev":"closing","code":"unauthorized","message":"the server now requires a token (configuration reloaded)"}"#
            ])
        // And a connection waiting to authenticate is let in when the tokens go.
        let waiting = harness.connect()
        harness.run { _ = harness.server.reload(ServerConfig()) }
        #expect(waiting.send(#"{"op":"ping"}"#) == [#"{"ok":true}"#])
    }
}
