import Dispatch
import Runnel
import RunnelTestSupport
import RunnelUV
import Testing

@testable import RunnelServer

/// The servers of one process, one per loop, each loop on a thread of its own: the connection
/// limits hold over every loop, `stats` counts every loop's connections, and sessions are
/// numbered once in the process (decision 0011's first step). Cross-thread: CI runs these
/// under the thread sanitizer.
@Suite struct ServerGroupTests {
    @Test func theConnectionLimitHoldsOverEveryLoop() {
        let servers = LoopServers(count: 2) { $0.maxConnections = 3 }
        defer { servers.shutdown() }
        let first = servers[0].connect()
        let second = servers[0].connect()
        let third = servers[1].connect()
        #expect([first, second, third].allSatisfy { servers.isOpen($0) })
        let refused = servers[1].connect()
        #expect(!servers.isOpen(refused))
        #expect(servers[1].lines(of: refused).first?.contains("max_connections (3)") == true)
        servers[0].close(first)
        let admitted = servers[1].connect()
        #expect(servers.isOpen(admitted))
        #expect(servers.group.admission.openCount == 3 && servers.group.admission.refusedCount == 1)
    }

    @Test func theAddressLimitHoldsOverEveryLoop() {
        let servers = LoopServers(count: 2) { $0.maxConnectionsPerAddress = 1 }
        defer { servers.shutdown() }
        let first = servers[1].connect()
        let refused = servers[0].connect()
        #expect(servers.isOpen(first) && !servers.isOpen(refused))
        #expect(servers[0].lines(of: refused).first?.contains("max_connections_per_address") == true)
    }

    /// Both loops accept at once, past the limit: exactly `max_connections` get in.
    @Test func loopsAcceptingAtOnceNeverPassTheLimit() {
        let servers = LoopServers(count: 2) { $0.maxConnections = 150 }
        defer { servers.shutdown() }
        let opened = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let clients = servers[index].connect(count: 100)
            let count = clients.filter { servers.isOpen($0) }.count
            opened.withLock { $0 += count }
        }
        #expect(opened.withLock { $0 } == 150)
        #expect(servers.group.admission.openCount == 150 && servers.group.admission.refusedCount == 50)
    }

    /// Values published and delivered on one loop, a request refused on the other: `stats`
    /// and `/metrics` on either report them all, asked while the first loop goes on publishing.
    @Test func statsAddUpEveryLoop() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let subscriber = servers[0].connect()
        let publisher = servers[0].connect()
        servers[0].send(subscriber, #"{"op":"sub","subject":"s","sid":"a"}"#)
        let other = servers[1].connect()
        servers[1].send(other, #"{"op":"nonsense"}"#)
        let asking = DispatchQueue(label: "asking")
        let asked = DispatchSemaphore(value: 0)
        asking.async {
            for _ in 0..<50 { _ = servers[1].send(other, #"{"op":"stats"}"#) }
            asked.signal()
        }
        for value in 0..<200 { servers[0].send(publisher, #"{"op":"pub","subject":"s","value":\#(value)}"#) }
        asked.wait()
        // The reply comes once loop 0 has answered: after the request, on loop 1's next turns.
        let stats = try #require(servers[1].ask(other, #"{"op":"stats","ref":"last"}"#, ref: "last"))
        #expect(stats.contains(#""connections":3,"subscriptions":1,"#))
        #expect(stats.contains(#""published":200,"delivered":200,"#))
        let metrics = servers[0].metrics()
        #expect(metrics.contains(#"runnel_request_errors_total{code="unknown_op"} 1"#))
        #expect(metrics.contains("runnel_delivered_total 200"))
        #expect(metrics.contains(#"runnel_connections{transport="memory"} 3"#))
    }

    /// A `stats` whose reply waits for another loop keeps its place: the lines after it (the
    /// next request's reply, a subscription's events) wait behind it.
    @Test func aStatsReplyWaitingForAnotherLoopKeepsItsPlace() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let client = servers[0].connect()
        let lines = servers[0].send(
            client, #"{"op":"stats","ref":1}"#, #"{"op":"sub","subject":"t","sid":"x","ref":2}"#,
            #"{"op":"pub","subject":"t","value":7,"ref":3}"#)
        #expect(lines.isEmpty)
        let answered = try #require(
            eventually { () -> [String]? in
                let lines = servers[0].lines(of: client)
                return lines.isEmpty ? nil : lines
            })
        #expect(answered.count == 4)
        #expect(answered.first?.hasPrefix(#"{"ok":true,"ref":1,"connections":1,"#) == true)
        #expect(
            Array(answered.dropFirst()) == [
                #"{"ok":true,"ref":2,"sid":"x"}"#, #"{"ev":"next","sid":"x","value":7}"#,
                #"{"ok":true,"ref":3,"receivers":1}"#,
            ])
    }

    /// A token's connections on two loops share its budget of steps: what one loop's
    /// evaluation overdrew leaves the other loop's none.
    @Test func aTokensBudgetIsSharedByItsConnectionsOnEveryLoop() throws {
        let servers = LoopServers(count: 2) { config in
            config.authTokens = ["t"]
            config.tokenEvalStepsPerSecond = 1000
            config.tokenEvalStepsBurst = 1000
        }
        defer { servers.shutdown() }
        let clients = (0..<2).map { servers[$0].connect() }
        for index in 0..<2 {
            servers[index].send(
                clients[index], #"{"op":"auth","token":"t"}"#, SessionEvaluationBudgetTests.sub("m", map: "len(str(.))")
            )
            // Loop 1's sub waits for the replica of "v", and the ping behind it.
            _ = try #require(servers[index].ask(clients[index], #"{"op":"ping","ref":"ready"}"#, ref: "ready"))
        }
        // Loop 0's evaluation overdraws the token's 1,000 steps; loop 1's, of the value its
        // replica is handed next, finds none left.
        let lines = servers[0].send(
            clients[0], #"{"op":"pub","subject":"v","value":"# + SessionEvaluationBudgetTests.bigString + "}")
        #expect(lines == [#"{"ev":"next","sid":"m","value":32000}"#])
        #expect(servers[1].lines(of: clients[1], count: 1) == [SessionEvaluationBudgetTests.limitError("m")])
    }

    @Test func sessionNumbersAreNeverTakenTwice() {
        let group = ServerGroup(config: ServerConfig(), logger: SessionHarness.logger)
        let numbers = Locked<[UInt64]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let taken = (0..<500).map { _ in group.nextSessionID() }
            numbers.withLock { $0 += taken }
        }
        #expect(Set(numbers.withLock { $0 }).count == 2000)
    }
}
