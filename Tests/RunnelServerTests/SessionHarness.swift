import Logging
import Runnel
import RunnelUV

@testable import RunnelServer

/// A server whose sessions run over `MemoryTransport`s, in process: no sockets, no threads.
///
/// Its loop is never run, so everything happens on the test's thread, inside
/// `performAsCurrent` (subscriptions then run inline, as on the loop). Stages that need the
/// clock (`delay`, `throttle`, ...) are tested elsewhere, on a virtual-time scheduler. One
/// thread only.
final class SessionHarness {
    let loop = EventLoop()
    let server: Server

    init(_ configure: (inout ServerConfig) -> Void = { _ in }) {
        var config = ServerConfig()
        configure(&config)
        server = Server(config: config, scheduler: loop.scheduler, logger: Self.logger)
    }

    /// A server on `makeStore`'s subject store (a durable one, say), made on this loop.
    init(config: ServerConfig = ServerConfig(), store makeStore: (LoopScheduler) throws -> any SubjectStore) rethrows {
        server = Server(
            config: config, scheduler: loop.scheduler, logger: Self.logger, subjects: try makeStore(loop.scheduler))
    }

    static let logger: Logger = {
        var logger = Logger(label: "session-tests")
        logger.logLevel = .critical
        return logger
    }()

    /// Runs `body` as the loop would run it.
    func run<T>(_ body: () throws -> T) rethrows -> T {
        try loop.scheduler.performAsCurrent(body)
    }

    /// A new client connection.
    func connect(maxRequestBytes: Int = 1 << 20) -> SessionClient {
        let transport = MemoryTransport(maxRequestBytes: maxRequestBytes)
        run { server.accept(transport) }
        return SessionClient(harness: self, transport: transport)
    }

    /// The server's `/metrics` text (its group has no other loop to wait for).
    func metrics() -> String {
        var text: String?
        run { server.gatherMetricsExposition { text = $0 } }
        return text!
    }

    /// The server's `stats` reply, through a connection of its own.
    func stats() -> String {
        let client = connect()
        defer { client.close() }
        return client.send(#"{"op":"stats"}"#).first ?? ""
    }
}

/// One client of a `SessionHarness`: sends requests, reads the lines written to it.
final class SessionClient {
    let harness: SessionHarness
    let transport: MemoryTransport

    init(harness: SessionHarness, transport: MemoryTransport) {
        self.harness = harness
        self.transport = transport
    }

    /// Sends `requests` in order and returns every line written meanwhile.
    @discardableResult
    func send(_ requests: String...) -> [String] {
        harness.run {
            for request in requests { transport.receive(request) }
        }
        return transport.takeLines()
    }

    /// The lines written since the last read (events published by others, say).
    func lines() -> [String] { transport.takeLines() }

    /// The client goes away.
    func close() { harness.run { transport.close() } }
}
