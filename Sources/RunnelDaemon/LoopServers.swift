import Logging
import Runnel
import RunnelHTTP
import RunnelServer
import RunnelUV

/// The daemon's servers, one per loop of its `LoopGroup`, each with its HTTP front door
/// (docs/decisions/0011-every-loop-serves-sessions-from-replicas.md): the first owns the
/// subjects (its store is the durable or clustered one), the others read them through
/// replicas. A connection is served for its whole life by the server of the loop its listener
/// placed it on. What the daemon does to every server (serve a listener, reload, drain) goes to
/// each on its own loop.
///
/// Thread rules: made on the first loop's thread before the group's other loops start; its
/// methods on the first loop's thread. Each member is touched only on its own loop (`each`).
/// Lifetime rule: the daemon holds it for its life; the servers live as long as it.
final class LoopServers: @unchecked Sendable {
    let loops: LoopGroup
    private let members: [Member]

    /// One loop's server and front door. Thread rules: its loop's thread only.
    struct Member: @unchecked Sendable {
        let server: Server
        let frontDoor: HTTPFrontDoor
    }

    /// The servers of a group of `count` loops whose first is `first`, under `config`; the
    /// first's store is `ownersStore`, the others' are in memory.
    init(config: ServerConfig, first: EventLoop, count: Int, ownersStore: any SubjectStore, logger: Logger) {
        let loops = LoopGroup(first: first, count: count)
        let group = ServerGroup(config: config, logger: logger)
        let originHints = Locked(OriginRefusalHints())
        members = loops.schedulers.enumerated().map { index, scheduler in
            let subjects: any SubjectStore
            if index == 0 {
                subjects = ownersStore
            } else {
                subjects = MemorySubjectStore(retained: RetainedValues(limitsOf: config, loop: scheduler))
            }
            let server = Server(config: config, scheduler: scheduler, logger: logger, subjects: subjects, group: group)
            server.loopGroup = loops
            // Set whether HTTP is served or not: the line port's answer to an HTTP request comes from it.
            let frontDoor = HTTPFrontDoor(server: server, originHints: originHints)
            server.frontDoor = frontDoor
            return Member(server: server, frontDoor: frontDoor)
        }
        self.loops = loops
    }

    /// The server that owns the subjects, on the first loop.
    var owner: Server { members[0].server }

    /// The process's open connections, over every loop. Any thread.
    var connectionCount: Int { owner.group.admission.openCount }

    /// Starts the loops other than the first.
    func start() { loops.start() }

    /// Runs `body` with each member on its own loop: the first's now, the others' queued to
    /// theirs (before anything queued there later, such as a connection placed on it).
    private func each(_ body: @escaping @Sendable (Member) -> Void) {
        loops.first.assertOnLoopThread()
        body(members[0])
        for member in members.dropFirst() { member.server.scheduler.schedule { body(member) } }
    }

    /// Serves the line protocol on `listener` (of the first loop) on every loop.
    func serveLines(_ listener: TCPListener) {
        each { $0.server.startSweep() }
        listener.spread(over: loops, acceptors: members.map(\.server.lineAcceptor))
    }

    /// Serves the HTTP front door on `listener` (of the first loop) on every loop.
    func serveHTTP(_ listener: TCPListener) {
        let name = HTTPFrontDoor.name(of: listener)
        each { $0.frontDoor.serving(name) }
        listener.spread(over: loops, acceptors: members.map(\.frontDoor.acceptor))
    }

    /// Applies `config` to every server (a reload); returns what changed, as the first saw it.
    func reload(_ config: ServerConfig) -> [ConfigChange] {
        let changes = owner.reload(config)
        for member in members.dropFirst() { member.server.scheduler.schedule { member.server.reload(config) } }
        return changes
    }

    /// Closes every server's connections, each flushing within `timeout`, and calls `then` on
    /// the first loop once all have closed.
    func closeAllConnections(timeout: Duration, then: @escaping () -> Void) {
        let first = loops.first
        let waiting = LoopBound(Countdown(count: members.count, then: then), loop: first)
        each { member in
            member.server.closeAllConnections(timeout: timeout) {
                first.schedule { waiting.value.countDown() }
            }
        }
    }
}

/// Calls `then` once `countDown()` has been called `count` times. Thread rules: one loop's.
private final class Countdown {
    private var left: Int
    private let then: () -> Void

    init(count: Int, then: @escaping () -> Void) {
        left = count
        self.then = then
    }

    func countDown() {
        left -= 1
        if left == 0 { then() }
    }
}
