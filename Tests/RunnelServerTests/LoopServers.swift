import Dispatch
import Runnel
import RunnelTestSupport
import RunnelUV

@testable import RunnelHTTP
@testable import RunnelServer

/// Servers sharing one group, each on a loop running on a thread of its own; clients are
/// `MemoryTransport`s made and used on their server's loop, handed to the test as `Client`s.
///
/// Thread rules: the test's thread; every touch of a server or a transport runs on its loop
/// (`run`). Lifetime rule: the loops run until `shutdown()`.
final class LoopServers: Sendable {
    let group: ServerGroup
    private let members: [LoopServer]

    /// `count` servers configured by `configure`, each with a store in memory.
    convenience init(count: Int, _ configure: (inout ServerConfig) -> Void = { _ in }) {
        self.init(loops: (0..<count).map { _ in EventLoop() }, ownersStore: nil, configure)
    }

    /// `count` servers configured by `configure`, the owner's store (loop 0's) made by
    /// `ownersStore` on its loop, every other's in memory.
    convenience init(
        count: Int, ownersStore: (LoopScheduler) throws -> any SubjectStore,
        _ configure: (inout ServerConfig) -> Void = { _ in }
    ) throws {
        let loops = (0..<count).map { _ in EventLoop() }
        self.init(loops: loops, ownersStore: try ownersStore(loops[0].scheduler), configure)
    }

    private init(loops: [EventLoop], ownersStore: (any SubjectStore)?, _ configure: (inout ServerConfig) -> Void) {
        var config = ServerConfig()
        configure(&config)
        let group = ServerGroup(config: config, logger: SessionHarness.logger)
        self.group = group
        members = loops.indices.map { index in
            let store = index == 0 ? ownersStore : nil
            return LoopServer(
                group: group, index: index, config: config, loop: loops[index],
                subjects: store
                    ?? MemorySubjectStore(retained: RetainedValues(limitsOf: config, loop: loops[index].scheduler)))
        }
    }

    subscript(index: Int) -> LoopServer { members[index] }

    /// Whether `client` (of any loop) is still open.
    func isOpen(_ client: LoopServer.Client) -> Bool { client.server.run { client.transport.isClosed == false } }

    func shutdown() { for member in members { member.shutdown() } }

    /// The subject `name` of the owner's store (loop 0's). On loop 0.
    func owned(_ name: String) -> SubjectEntry? { members[0].server.value.subjects[name] }

    /// How many subjects loop `index`'s server holds in its own store. On that loop.
    func subjectCount(on index: Int) -> Int { members[index].server.value.subjects.count }

    /// The replicas of loop `index`'s server. On that loop.
    func replicas(on index: Int) -> SubjectReplicas? { members[index].server.value.replicas }
}

final class LoopServer: Sendable {
    private let loop: EventLoop
    let server: UnsafeTransfer<Server>

    init(group: ServerGroup, index: Int, config: ServerConfig, loop: EventLoop, subjects: any SubjectStore) {
        self.loop = loop
        server = UnsafeTransfer(
            Server(
                config: config, scheduler: loop.scheduler, logger: SessionHarness.logger, subjects: subjects,
                group: group))
        loop.start(name: "group-test-\(index)")
    }

    /// The HTTP front door and its listener, once `serveHTTP()` made them.
    private let http = Locked<UnsafeTransfer<(HTTPFrontDoor, TCPListener)>?>(nil)

    /// Serves this server's HTTP front door on a free loopback port, until `shutdown()`;
    /// returns the port.
    func serveHTTP() throws -> Int {
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: loop)
        let port = UnsafeTransfer(listener)
        return run {
            let frontDoor = HTTPFrontDoor(server: self.server.value)
            frontDoor.serve(port.value)
            self.http.withLock { $0 = UnsafeTransfer((frontDoor, port.value)) }
            return port.value.port
        }
    }

    /// A client of this loop's server, used on the loop only.
    struct Client: Sendable {
        let server: LoopServer
        let box: UnsafeTransfer<MemoryTransport>
        var transport: MemoryTransport { box.value }
    }

    /// Runs `body` on the loop and waits for it.
    func run<T>(_ body: @escaping () -> T) -> T { runJob(on: loop, body) }

    /// Holds the loop's thread in one turn, as a loop too busy to look at its inbox is, until
    /// the returned function is called; returns once the loop is held.
    func hold() -> @Sendable () -> Void {
        let held = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        _ = loop.scheduler.schedule {
            held.signal()
            released.wait()
        }
        held.wait()
        return { released.signal() }
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
    func send(_ client: Client, _ requests: String...) -> [String] { send(client, requests) }

    @discardableResult
    func send(_ client: Client, _ requests: [String]) -> [String] {
        run {
            // Lines after one that paused the input (a `sub` waiting for its replica) come as a
            // socket's read-ahead would: the session holds them.
            for request in requests {
                if client.transport.isInputPaused {
                    client.transport.receiveReadAhead(request)
                } else {
                    client.transport.receive(request)
                }
            }
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

    /// The lines `client` is sent from now until there are `count` of them (nil if they do not
    /// come within 10 s).
    func lines(of client: Client, count: Int) -> [String]? {
        var lines: [String] = []
        return eventually {
            lines += self.lines(of: client)
            return lines.count >= count ? lines : nil
        }
    }

    func close(_ client: Client) { run { client.transport.close() } }

    func shutdown() {
        if let http = http.withLock({ $0 }) {
            run {
                http.value.0.closeAllConnections(flushingWithin: .zero)
                http.value.1.close()
            }
        }
        _ = loop.shutdown()
    }
}

/// Runs `body` on `loop` as one job of its queue (one callback of the loop) and waits for it.
func runJob<T>(on loop: EventLoop, _ body: @escaping () -> T) -> T {
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

/// A value handed to a loop's thread and back, used on one thread at a time.
struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
