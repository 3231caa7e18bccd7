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
        let client = servers[1].connect()
        let lines = servers[1].send(
            client, #"{"op":"stats","ref":1}"#, #"{"op":"sub","subject":"t","sid":"x","ref":2}"#,
            #"{"op":"pub","subject":"t","value":7,"ref":3}"#)
        #expect(lines.isEmpty)
        let answered = try #require(
            eventually { () -> [String]? in
                let lines = servers[1].lines(of: client)
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
    @Test func aTokensBudgetIsSharedByItsConnectionsOnEveryLoop() {
        let servers = LoopServers(count: 2) { config in
            config.authTokens = ["t"]
            config.tokenEvalStepsPerSecond = 1000
            config.tokenEvalStepsBurst = 1000
        }
        defer { servers.shutdown() }
        let big = SessionEvaluationBudgetTests.bigString
        for index in 0..<2 {
            let client = servers[index].connect()
            let lines = servers[index].send(
                client, #"{"op":"auth","token":"t"}"#, SessionEvaluationBudgetTests.sub("m", map: "len(str(.))"),
                #"{"op":"pub","subject":"v","value":"# + big + "}")
            let event = lines.first { $0.hasPrefix(#"{"ev":"#) }
            // Loop 0's evaluation overdraws the token's 1,000 steps; loop 1's finds none left.
            let expected =
                index == 0
                ? #"{"ev":"next","sid":"m","value":32000}"# : SessionEvaluationBudgetTests.limitError("m")
            #expect(event == expected)
        }
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

/// Servers sharing one group, each on a loop running on a thread of its own; clients are
/// `MemoryTransport`s made and used on their server's loop, handed to the test as `Client`s.
///
/// Thread rules: the test's thread; every touch of a server or a transport runs on its loop
/// (`run`). Lifetime rule: the loops run until `shutdown()`.
private final class LoopServers: Sendable {
    let group: ServerGroup
    private let members: [LoopServer]

    init(count: Int, _ configure: (inout ServerConfig) -> Void = { _ in }) {
        var config = ServerConfig()
        configure(&config)
        let group = ServerGroup(config: config, logger: SessionHarness.logger)
        self.group = group
        members = (0..<count).map { LoopServer(group: group, index: $0, config: config) }
    }

    subscript(index: Int) -> LoopServer { members[index] }

    /// Whether `client` (of any loop) is still open.
    func isOpen(_ client: LoopServer.Client) -> Bool { client.server.run { client.transport.isClosed == false } }

    func shutdown() { for member in members { member.shutdown() } }
}

private final class LoopServer: Sendable {
    private let loop = EventLoop()
    private let server: UnsafeTransfer<Server>

    init(group: ServerGroup, index: Int, config: ServerConfig) {
        server = UnsafeTransfer(
            Server(
                config: config, scheduler: loop.scheduler, logger: SessionHarness.logger,
                subjects: MemorySubjectStore(), group: group))
        loop.start(name: "group-test-\(index)")
    }

    /// A client of this loop's server, used on the loop only.
    struct Client: Sendable {
        let server: LoopServer
        fileprivate let box: UnsafeTransfer<MemoryTransport>
        var transport: MemoryTransport { box.value }
    }

    /// Runs `body` on the loop and waits for it.
    func run<T>(_ body: @escaping () -> T) -> T {
        let result = Locked<UnsafeTransfer<T>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let work = UnsafeTransfer(body)
        _ = loop.scheduler.schedule {
            let value = work.value()
            result.withLock { $0 = UnsafeTransfer(value) }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }.value
    }

    func connect() -> Client { connect(count: 1)[0] }

    func connect(count: Int) -> [Client] {
        run {
            (0..<count).map { _ in
                let transport = MemoryTransport()
                self.server.value.accept(transport)
                return Client(server: self, box: UnsafeTransfer(transport))
            }
        }
    }

    @discardableResult
    func send(_ client: Client, _ requests: String...) -> [String] {
        run {
            for request in requests { client.transport.receive(request) }
            return client.transport.takeLines()
        }
    }

    /// Sends `request` and waits for the line that answers it (its `ref` is `ref`), dropping
    /// the others; nil if none comes within 10 s.
    func ask(_ client: Client, _ request: String, ref: String) -> String? {
        send(client, request).first { $0.contains(#""ref":"\#(ref)""#) }
            ?? eventually { lines(of: client).first { $0.contains(#""ref":"\#(ref)""#) } }
    }

    /// The server's `/metrics` text, once it has every loop's figures.
    func metrics() -> String {
        let text = Locked<String?>(nil)
        let made = DispatchSemaphore(value: 0)
        run {
            self.server.value.gatherMetricsExposition { exposition in
                text.withLock { $0 = exposition }
                made.signal()
            }
        }
        made.wait()
        return text.withLock { $0 }!
    }

    func lines(of client: Client) -> [String] { run { client.transport.takeLines() } }

    func close(_ client: Client) { run { client.transport.close() } }

    func shutdown() { _ = loop.shutdown() }
}

/// A value handed to a loop's thread and back, used on one thread at a time.
private struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
