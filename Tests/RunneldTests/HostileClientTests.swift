import Dispatch
import Foundation
import RunnelTestSupport
import Synchronization
import Testing

/// Every kind of hostile client at once against one `runneld`, then proof that the server is
/// still whole: it answers, delivers a burst without loss and in order, holds no leftover
/// connection, subscription or timer, and its resident memory stays within what its
/// configuration allows.
///
/// The clients run on their own threads, each with its own sockets; problems are collected
/// and recorded on the test's thread at the end.
@Suite struct HostileClientTests {
    /// The limits the daemon runs with, small so that each one is reached quickly.
    static let maxConnections = 64
    static let maxLineBytes = 65_536
    static let maxPendingBytes = 262_144

    /// The most the daemon's resident memory may grow over its baseline (measured once the
    /// well-behaved clients are set up), derived from the configuration. Per connection: a
    /// partial line (`max_line_bytes`); unsent output (`max_pending_bytes`, passed by at most
    /// one event or reply, here at most `max_line_bytes`); the requests held while its input is
    /// paused (at most the rest of one read, the loop's 256 KiB read buffer, and one line that
    /// was split across reads, `max_line_bytes`); and one 64 KiB write chunk. That, times
    /// `max_connections`, plus 32 MiB for the allocator's fragmentation and the runtime:
    /// 64 x (3 x 64 + 256 + 256 + 64) KiB + 32 MiB = 80 MiB.
    static var rssGrowthBound: Int {
        let perConnection = 3 * maxLineBytes + maxPendingBytes + 256 * 1024 + 64 * 1024
        return maxConnections * perConnection + 32 * 1024 * 1024
    }

    @Test(.timeLimit(.minutes(2)))
    func oneServerSurvivesEveryHostileClientAtOnce() throws {
        let started = ContinuousClock.now
        var config = RunneldConfig()
        config.maxConnections = Self.maxConnections
        config.maxLineBytes = Self.maxLineBytes
        config.maxPendingBytes = Self.maxPendingBytes
        config.logLevel = "info"
        let server = try RunneldProcess(config: config)
        let port = server.port

        // The well-behaved side: a control connection and a subscriber that reads.
        let control = try server.connect()
        let subscriber = try server.connect()
        try subscriber.subscribe("final", sid: "f")
        // Subjects that make a `list` reply about 100 times the size of its request.
        try control.sendRaw(
            (0..<100).map { #"{"op":"create","subject":"pad.subject-number-\#($0)","kind":"subject"}"# + "\n" }
                .joined())
        for _ in 0..<100 { #expect(try control.readJSON() == ["ok": true]) }
        let baseline = try #require(ResidentMemory.bytes(of: server.pid))

        let findings = Findings()
        let group = DispatchGroup()
        func run(_ name: String, _ body: @escaping @Sendable () throws -> Void) {
            DispatchQueue.global().async(group: group) {
                let start = ContinuousClock.now
                do { try body() } catch { findings.add("\(name): \(error)") }
                print("hostile: \(name) took \(ContinuousClock.now - start)")
            }
        }

        // Long-lived hostile clients connect before the filler takes the free slots.
        let slow = Unchecked(try server.connect(receiveBufferSize: 4096))
        try slow.value.subscribe("flood", sid: "slow")
        let huge = Unchecked(try server.connect())
        let pipeliner = Unchecked(try server.connect(receiveBufferSize: 4096))
        let floodDone = Flag()

        run("2 GB line") { try Self.sendTwoGigabyteLine(huge.value, findings) }
        run("slow consumer flood") { try Self.flood(port: port, findings, done: floodDone) }
        run("slow consumer") { try Self.expectClosedAsSlowConsumer(slow.value, findings, floodDone: floodDone) }
        run("pipeliner") { try Self.pipelineWithoutReading(pipeliner.value, findings) }
        for thread in 0..<4 {
            run("random bytes \(thread)") { try Self.sendRandomBytes(port: port, thread: thread, findings) }
        }
        run("killed mid-write") { try Self.killMidWrite(port: port, findings) }
        for thread in 0..<2 {
            run("subscribe/close cycles \(thread)") {
                try Self.subscribeAndClose(port: port, cycles: 5000, thread: thread, findings)
            }
        }
        run("connection filler") { try Self.fillConnections(port: port, findings) }
        #expect(group.wait(timeout: .now() + 90) == .success, "hostile clients still running after 90 s")
        for finding in findings.all { Issue.record("\(finding)") }

        // The server goes on: it answers, forgets every hostile client, and delivers in order.
        try control.barrier()
        let settled = try eventually(timeout: .seconds(10)) { () -> JSON? in
            let stats = try control.stats()
            return stats["connections"] == 2 && stats["subscriptions"] == 1 && stats["timers"] == .idleTimers
                ? stats : nil
        }
        if settled == nil { Issue.record("leftover state: \(try control.stats())") }
        let burst = 5000
        try control.sendRaw((0..<burst).map { #"{"op":"pub","subject":"final","value":\#($0)}"# + "\n" }.joined())
        try control.barrier()
        for n in 0..<burst {
            let line = subscriber.readLine()
            guard line == #"{"ev":"next","sid":"f","value":\#(n)}"# else {
                Issue.record("burst value \(n): got \(line ?? "nothing")")
                break
            }
        }

        let rss = try #require(ResidentMemory.bytes(of: server.pid))
        let peak = try #require(ResidentMemory.peakBytes(of: server.pid))
        let elapsed = ContinuousClock.now - started
        print(
            "hostile: baseline RSS \(baseline / 1024) KiB, after \(rss / 1024) KiB, peak \(peak / 1024) KiB, "
                + "growth bound \(Self.rssGrowthBound / 1024) KiB, \(elapsed)")
        #expect(rss - baseline <= Self.rssGrowthBound, "RSS grew by \(rss - baseline) bytes")
        // VmHWM: the peak, which the allocator's giving memory back cannot hide.
        #expect(peak - baseline <= Self.rssGrowthBound, "peak RSS grew by \(peak - baseline) bytes")
        #expect(Glibc.kill(server.pid, 0) == 0, "runneld is gone")
        let logged = server.stderrLines
        print(
            "hostile: runneld logged \(logged.count) lines, \(logged.filter { $0.contains("refusing") }.count) refusals"
        )
    }

    // MARK: Hostile clients

    /// One line of 2 GiB streamed in 4 MiB pieces: the server discards it as it arrives and
    /// answers `line_too_long`, then handles the next request on the same connection.
    static func sendTwoGigabyteLine(_ client: BlockingTCPClient, _ findings: Findings) throws {
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 4 << 20)
        try client.sendRaw(#"{"op":"pub","subject":"big","value":""#)
        for _ in 0..<512 { try client.sendRaw(piece) }
        try client.sendRaw("\"}\n" + #"{"op":"ping","ref":"after"}"# + "\n")
        let reply = try client.readJSON(timeout: .seconds(30))
        if reply["code"] != "line_too_long" || reply["ok"] != false {
            findings.add("2 GB line: expected line_too_long, got \(reply)")
        }
        let ping = try client.readJSON()
        if ping != ["ok": true, "ref": "after"] { findings.add("2 GB line: ping after it got \(ping)") }
    }

    /// Publishes ~1 KiB values to `flood` until no one receives them (the slow consumer was
    /// closed), at most 40,000.
    static func flood(port: UInt16, _ findings: Findings, done: Flag) throws {
        defer { done.set() }
        let publisher = try connectRetrying(port: port)
        let payload = String(repeating: "x", count: 1000)
        for batch in 0..<400 {
            var text = ""
            for n in 0..<100 {
                let ref = n == 99 ? #","ref":\#(batch)"# : ""
                text += #"{"op":"pub","subject":"flood","value":[\#(batch * 100 + n),"\#(payload)"]\#(ref)}"# + "\n"
            }
            try publisher.sendRaw(text)
            let reply = try publisher.readJSON(timeout: .seconds(10))
            if reply["receivers"] == 0 { return }
        }
        findings.add("slow consumer: still subscribed after 40,000 values")
    }

    /// Never reads until the flood is over; then it must find its stream ended by the
    /// slow-consumer line.
    static func expectClosedAsSlowConsumer(_ client: BlockingTCPClient, _ findings: Findings, floodDone: Flag) throws {
        floodDone.wait()
        guard let lines = client.readUntilClosed(timeout: .seconds(10)) else {
            findings.add("slow consumer: not closed")
            return
        }
        if lines.last != #"{"ev":"closing","code":"slow_consumer"}"# {
            findings.add("slow consumer: last line \(lines.last ?? "none")")
        }
    }

    /// Pipelines `list` requests (each reply ~100 times the request) and never reads: the
    /// server must stop reading this connection while its output is over `max_pending_bytes`,
    /// so the client's sends block, well before it has sent 4 MiB.
    static func pipelineWithoutReading(_ client: BlockingTCPClient, _ findings: Findings) throws {
        var size: Int32 = 65_536
        setsockopt(client.descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let request = Array((#"{"op":"list","prefix":"pad."}"# + "\n").utf8)
        let block = [UInt8]((0..<1000).flatMap { _ in request })
        var sent = 0
        var blockedSince: ContinuousClock.Instant?
        while sent < 4 << 20 {
            let count = block.withUnsafeBytes { send(client.descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                sent += count
                blockedSince = nil
                continue
            }
            guard count < 0, errno == EAGAIN || errno == EWOULDBLOCK else {
                findings.add("pipeliner: send failed, errno \(errno)")
                return
            }
            let since = blockedSince ?? ContinuousClock.now
            blockedSince = since
            if ContinuousClock.now - since > .milliseconds(500) { break }
            pollPause(.milliseconds(5))
        }
        if sent >= 4 << 20 { findings.add("pipeliner: the server kept reading (\(sent) bytes of requests)") }
        print("hostile: pipeliner sent \(sent) bytes of requests before the server stopped reading")
        client.resetAndClose()
    }

    /// 200 connections (50 per thread, 10 open at a time) sending random bytes; half of them
    /// read until the server closes, half reset the connection.
    static func sendRandomBytes(port: UInt16, thread: Int, _ findings: Findings) throws {
        var generator = SplitMix64(seed: UInt64(thread + 1))
        for group in 0..<5 {
            let clients = try (0..<10).map { _ in try connectRetrying(port: port) }
            for client in clients {
                let bytes = (0..<16_384).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                try? client.sendRaw(bytes + [10])
            }
            for (index, client) in clients.enumerated() {
                if (index + group) % 2 == 0 {
                    client.resetAndClose()
                    continue
                }
                client.shutdownWrite()
                guard let lines = client.readUntilClosed(timeout: .seconds(20)) else {
                    findings.add("random bytes: the server did not close after the client's end of input")
                    continue
                }
                for line in lines {
                    guard let reply = try? JSON.parse(line), reply["ok"] == false || reply["ev"] == "closing" else {
                        findings.add("random bytes: unexpected line \(line.prefix(200))")
                        break
                    }
                }
            }
        }
    }

    /// Connections that die in the middle of a request: half close (FIN) after half a line, half
    /// reset (RST, `SO_LINGER` 0); some hold a subscription to the flood when they die.
    static func killMidWrite(port: UInt16, _ findings: Findings) throws {
        for n in 0..<200 {
            let client = try connectRetrying(port: port)
            if n % 3 == 0 { try? client.send(#"{"op":"sub","subject":"flood","sid":"v"}"#) }
            try? client.sendRaw(#"{"op":"pub","subject":"victims","value":{"half":"writ"#)
            if n % 2 == 0 { client.close() } else { client.resetAndClose() }
        }
    }

    /// Connect, subscribe, close. Three cycles in four wait for the `sub` reply; every fourth
    /// closes with the request still in flight. Closes alternate between a reset and a normal
    /// close (resets leave no TIME_WAIT behind, so repeated runs do not run out of ports).
    static func subscribeAndClose(port: UInt16, cycles: Int, thread: Int, _ findings: Findings) throws {
        var refused = 0
        for n in 0..<cycles {
            let client = try connectRetrying(port: port)
            try? client.send(#"{"op":"sub","subject":"cycles","sid":"c","ref":\#(n)}"#)
            if n % 4 != 3 {
                let reply = try? client.readJSON()
                if reply?["ev"] == "closing" {
                    refused += 1
                } else if reply != ["ok": true, "ref": .number(Double(n)), "sid": "c"] {
                    findings.add("cycle \(thread).\(n): reply \(String(describing: reply))")
                }
            }
            if n % 4 == 1 { client.close() } else { client.resetAndClose() }
        }
        if refused > cycles / 8 { findings.add("cycles \(thread): \(refused) refused") }
    }

    /// Opens connections until the server refuses them at `max_connections`; each refused one
    /// gets a `closing` line with code `limit` and is closed. Then lets them all go.
    static func fillConnections(port: UInt16, _ findings: Findings) throws {
        pollPause(.milliseconds(200))
        var held: [BlockingTCPClient] = []
        var refusals = 0
        while refusals < 3 && held.count < 2 * maxConnections {
            let client = try connectRetrying(port: port)
            try? client.send(#"{"op":"ping","ref":"fill"}"#)
            let reply = try client.readJSON()
            if reply == ["ok": true, "ref": "fill"] {
                held.append(client)
                continue
            }
            refusals += 1
            if reply["ev"] != "closing" || reply["code"] != "limit" || reply["message"]?.string == nil {
                findings.add("filler: refusal was \(reply)")
            }
            if client.readUntilClosed() == nil { findings.add("filler: refused connection left open") }
        }
        if refusals < 3 { findings.add("filler: \(held.count) connections and no refusal") }
        if held.count > maxConnections { findings.add("filler: \(held.count) connections accepted") }
        held.removeAll()
    }

    /// A connection to the daemon; retried while the connect itself fails (a full backlog).
    static func connectRetrying(port: UInt16) throws -> BlockingTCPClient {
        var attempts = 0
        while true {
            do {
                return try BlockingTCPClient(port: Int(port))
            } catch {
                attempts += 1
                if attempts > 100 { throw error }
                pollPause(.milliseconds(10))
            }
        }
    }
}

/// Problems seen on the client threads, recorded on the test's thread.
final class Findings: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ finding: String) { list.withLock { $0.append(finding) } }
    var all: [String] { list.withLock { $0 } }
}

/// A one-way signal between threads.
final class Flag: Sendable {
    private let isSet = Mutex(false)
    func set() { isSet.withLock { $0 = true } }
    var isRaised: Bool { isSet.withLock { $0 } }
    func wait() { while !isRaised { pollPause(.milliseconds(10)) } }
}

/// Hands a value made on one thread to the one thread that uses it from then on.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
