import Foundation
import Testing

@testable import RunnelServer

/// The evaluation bounds through sessions: a connection's budget of steps and the bound on
/// one publish's evaluations end subscriptions with `eval` / "limit", count them in `stats`,
/// leave other connections and subscriptions without stages alone, and follow a reload.
struct SessionEvaluationBudgetTests {
    /// A string of 32,000 bytes: `len(str(.))` of it costs some 2,000 steps (16 bytes a step),
    /// twice a budget of 1,000, which then takes a second to refill at 1,000 steps a second.
    static let bigString = "\"" + String(repeating: "x", count: 32_000) + "\""

    static func sub(_ sid: String, map expression: String) -> String {
        #"{"op":"sub","subject":"v","sid":"\#(sid)","ops":[{"op":"map","expr":"\#(expression)"}]}"#
    }

    static func limitError(_ sid: String) -> String {
        #"{"ev":"error","sid":"\#(sid)","code":"eval","message":"limit","stage":0}"#
    }

    /// `stats`' `eval_refused` member.
    static func refused(_ harness: SessionHarness) -> String? { refused(inStats: harness.stats()) }

    static func refused(inStats stats: String) -> String? {
        guard let start = stats.range(of: #""eval_refused":"#)?.upperBound,
            let end = stats[start...].firstIndex(of: "}")
        else { return nil }
        return String(stats[start...end])
    }

    /// Connections of one token share its budget: a second connection does not bring a
    /// fresh one. A connection of another token, or of the same token after a refill, evaluates.
    @Test func theConnectionsOfOneTokenShareItsBudget() {
        let harness = SessionHarness { config in
            config.authTokens = ["t1", "t2"]
            config.tokenEvalStepsPerSecond = 1000
            config.tokenEvalStepsBurst = 1000
        }
        func client(_ token: String) -> SessionClient {
            let client = harness.connect()
            #expect(client.send(#"{"op":"auth","token":"\#(token)","ref":1}"#) == [#"{"ok":true,"ref":1}"#])
            return client
        }
        let first = client("t1")
        let second = client("t1")
        let other = client("t2")
        first.send(Self.sub("f", map: "len(str(.))"))
        second.send(Self.sub("s", map: "len(str(.)) + 1"))
        other.send(Self.sub("o", map: "len(str(.)) + 2"))
        for connection in [first, second, other] { _ = connection.lines() }

        client("t2").send(#"{"op":"pub","subject":"v","value":"# + Self.bigString + "}")
        // `first` overdraws the token's 1,000 steps; `second` finds none left.
        #expect(first.lines() == [#"{"ev":"next","sid":"f","value":32000}"#])
        #expect(second.lines() == [Self.limitError("s")])
        #expect(other.lines() == [#"{"ev":"next","sid":"o","value":32002}"#])
        let stats = other.send(#"{"op":"stats"}"#).first ?? ""
        #expect(Self.refused(inStats: stats) == #"{"connection":0,"token":1,"publish":0}"#)
    }

    @Test func aConnectionOverItsBudgetHasItsStageSubscriptionsEndedAndOthersGoOn() {
        let harness = SessionHarness { config in
            config.maxEvalStepsPerSecond = 1000
            config.maxEvalStepsBurst = 1000
        }
        let attacker = harness.connect()
        for k in 0..<20 { attacker.send(Self.sub("a\(k)", map: "len(str(.)) + \(k)")) }
        attacker.send(#"{"op":"sub","subject":"v","sid":"plain"}"#)
        let bystander = harness.connect()
        bystander.send(Self.sub("b", map: "len(str(.))"))
        _ = attacker.lines()
        _ = bystander.lines()

        harness.connect().send(#"{"op":"pub","subject":"v","value":"# + Self.bigString + "}")
        let lines = attacker.lines()
        // The first evaluation starts with steps left and overdraws them; the others find none.
        #expect(lines.first == #"{"ev":"next","sid":"a0","value":32000}"#)
        #expect(Array(lines.dropFirst().prefix(19)) == (1..<20).map { Self.limitError("a\($0)") })
        #expect(lines.last == #"{"ev":"next","sid":"plain","value":"# + Self.bigString + "}")
        #expect(lines.count == 21)
        // Another connection has a budget of its own.
        #expect(bystander.lines() == [#"{"ev":"next","sid":"b","value":32000}"#])
        #expect(Self.refused(harness) == #"{"connection":19,"token":0,"publish":0}"#)
        // The next value ends the subscription that overdrew the budget too; the connection
        // goes on: its subscription without stages, and new requests.
        harness.connect().send(#"{"op":"pub","subject":"v","value":1}"#)
        #expect(attacker.lines() == [Self.limitError("a0"), #"{"ev":"next","sid":"plain","value":1}"#])
        // The bystander's one evaluation overdrew its own budget of 1,000 the same way.
        #expect(bystander.lines() == [Self.limitError("b")])
        #expect(Self.refused(harness) == #"{"connection":21,"token":0,"publish":0}"#)
        #expect(attacker.send(#"{"op":"ping","ref":1}"#) == [#"{"ok":true,"ref":1}"#])
    }

    @Test func aPublishPastItsBoundEndsTheSubscriptionsItHasNotReached() throws {
        let harness = SessionHarness { config in
            config.maxPublishEvalMs = 1
            config.maxEvalStepsPerSecond = 1_000_000_000_000
            config.maxEvalStepsBurst = 1_000_000_000_000
        }
        // Ten connections, each well within its own budget: 30 evaluations of 12,500 steps
        // each (`str` of 200,000 bytes), far more than a millisecond together.
        let clients = (0..<10).map { _ in harness.connect() }
        for (index, client) in clients.enumerated() {
            for k in 0..<30 { client.send(Self.sub("s\(k)", map: "len(str(.)) + \(index * 100 + k)")) }
            _ = client.lines()
        }
        let plain = harness.connect()
        plain.send(#"{"op":"sub","subject":"v","sid":"p"}"#)
        _ = plain.lines()
        let value = "\"" + String(repeating: "y", count: 200_000) + "\""
        harness.connect().send(#"{"op":"pub","subject":"v","value":"# + value + "}")

        var delivered = 0
        var ended: [String] = []
        for client in clients {
            let lines = client.lines()
            #expect(lines.count == 30, "one event per subscription")
            for line in lines {
                if line.hasPrefix(#"{"ev":"next""#) {
                    delivered += 1
                } else {
                    #expect(line.hasSuffix(#","code":"eval","message":"limit","stage":0}"#), "\(line)")
                    ended.append(line)
                }
            }
        }
        // The first evaluation always runs; the bound stops the rest long before the 300th.
        #expect(delivered >= 1)
        #expect(ended.count > 0)
        #expect(delivered + ended.count == 300)
        #expect(Self.refused(harness) == #"{"connection":0,"token":0,"publish":\#(ended.count)}"#)
        #expect(plain.lines() == [#"{"ev":"next","sid":"p","value":"# + value + "}"])

        // The next publish has a bound of its own: the subscriptions left all receive.
        harness.connect().send(#"{"op":"pub","subject":"v","value":"z"}"#)
        let received = clients.map { $0.lines().count }.reduce(0, +)
        #expect(received == delivered)
    }

    @Test func aReloadAppliesToOpenConnections() {
        let harness = SessionHarness { config in
            config.maxEvalStepsPerSecond = 1_000_000_000
            config.maxEvalStepsBurst = 1_000_000_000
        }
        let client = harness.connect()
        client.send(Self.sub("one", map: "len(str(.))"), Self.sub("two", map: "len(str(.)) + 1"))
        let publisher = harness.connect()
        publisher.send(#"{"op":"pub","subject":"v","value":"# + Self.bigString + "}")
        #expect(
            client.lines() == [
                #"{"ev":"next","sid":"one","value":32000}"#, #"{"ev":"next","sid":"two","value":32001}"#,
            ]
        )

        var lowered = harness.server.config
        lowered.maxEvalStepsPerSecond = 1000
        lowered.maxEvalStepsBurst = 1000
        let changes = harness.run { harness.server.reload(lowered) }
        #expect(Set(changes.map(\.key)) == ["max_eval_steps_per_second", "max_eval_steps_burst"])
        #expect(changes.allSatisfy { $0.applicability == .live })
        publisher.send(#"{"op":"pub","subject":"v","value":"# + Self.bigString + "}")
        #expect(client.lines() == [#"{"ev":"next","sid":"one","value":32000}"#, Self.limitError("two")])
    }
}
