import Logging
import Runnel
import RunnelHTTP
import RunnelServer
import RunnelUV

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The daemon's life: start, serve, reload on SIGHUP, drain and stop on SIGTERM/SIGINT.
///
/// A server runs on each libuv loop of its `LoopGroup` (`loops`; the first on the calling, main,
/// thread), serving the connections placed on it for life (`LoopServers`); the first owns the
/// subjects. The durable journal's writer and the cluster's NATS work have threads of their own.
public enum RunneldMain {
    /// Runs `runneld` with `config` until SIGTERM or SIGINT. `reload` re-reads the
    /// configuration (the file and the flags) for SIGHUP. Returns the exit status: 0 after a
    /// clean shutdown, 1 when it cannot listen or start.
    public static func run(config: ServerConfig, reload: @escaping @Sendable () throws -> ServerConfig) -> Int32 {
        MallocSettings.apply()
        let levelSetting = LogLevelSetting(config.logLevel)
        StderrLogHandler.bootstrap(levelSetting: levelSetting)
        let logger = Logger(label: "runneld")
        let loop = EventLoop()
        let subjects: any SubjectStore
        let retained = RetainedValues(limitsOf: config, loop: loop.scheduler)
        if config.cluster.isClustered {
            // The cluster keeps the subjects (JetStream's files for durable ones): no journal.
            if let dataDir = config.dataDir {
                logger.warning(
                    "data_dir is not used in a cluster: durable subjects are kept by JetStream",
                    metadata: ["data_dir": "\(dataDir)"])
            }
            guard let clustered = joinCluster(config.cluster, retained: retained, loop: loop, logger: logger) else {
                return 1
            }
            subjects = clustered
        } else if let dataDir = config.dataDir {
            // Restored before the listener opens, so nobody sees the server without them; a
            // start refused for what is stored is refused before anything there is written.
            do {
                let journal = try JournalDatabase.read(directory: dataDir)
                if let conflict = conflict(of: config, with: journal) {
                    logger.critical("cannot start: \(conflict)", metadata: ["data_dir": "\(dataDir)"])
                    return 1
                }
                subjects = try DurableSubjectStore(
                    journal: journal, fsync: config.fsync, scheduler: loop.scheduler, logger: logger,
                    retained: retained)
            } catch {
                logger.critical("cannot start: durable subjects: \(error)", metadata: ["data_dir": "\(dataDir)"])
                return 1
            }
            logger.info(
                "durable subjects restored", metadata: ["data_dir": "\(dataDir)", "subjects": "\(subjects.count)"])
        } else {
            subjects = MemorySubjectStore(retained: retained)
        }
        let servers = LoopServers(
            config: config, first: loop, count: config.loops == 0 ? LoopGroup.availableParallelism : config.loops,
            ownersStore: subjects, logger: logger)
        servers.start()
        let daemon = Daemon(loop: loop, servers: servers, logger: logger, levelSetting: levelSetting, reload: reload)
        loop.scheduler.schedule { daemon.start() }
        let closeStatus = loop.run()
        // The other loops' connections closed with their servers' sessions (or, after a second
        // stop signal, close now).
        servers.loops.shutdown()
        // Every durable change accepted is written before the process ends.
        subjects.close()
        if closeStatus != 0 {
            logger.warning("event loop closed with handles still open", metadata: ["status": "\(closeStatus)"])
        }
        let status = daemon.exitStatus
        logger.info("runneld stopped", metadata: ["status": "\(status)"])
        return status
    }

    /// The node's store once NATS answered (within `cluster_connect_timeout`); nil, logged with
    /// the URLs, when it did not.
    private static func joinCluster(
        _ config: ClusterConfig, retained: RetainedValues, loop: EventLoop, logger: Logger
    ) -> ClusterSubjectStore? {
        let urls = config.nats.joined(separator: ", ")
        do throws(NATSError) {
            let link = try ClusterLink(config: config, scheduler: loop.scheduler, logger: logger)
            let store = try ClusterSubjectStore(link: link, retained: retained)
            try link.start()
            logger.notice(
                "joined cluster \(config.name) as \(config.nodeName) through \(urls)",
                metadata: ["instance": "\(link.instance)", "subjects": "\(store.count)"])
            return store
        } catch {
            let seconds = ServerConfig.renderSeconds(config.connectTimeout)
            logger.critical(
                "cannot start: cannot join the cluster through \(urls) (cluster_nats; waited up to \(seconds) s): \(error)"
            )
            return nil
        }
    }

    /// The first `[[subjects]]` entry that disagrees with the durable subject of its name in
    /// `journal` (`Server.createConfiguredSubjects` applies the same rule to the live store).
    private static func conflict(of config: ServerConfig, with journal: StoredJournal) -> SubjectConflict? {
        let stored = Dictionary(journal.subjects.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for definition in config.subjects {
            guard let subject = stored[definition.name] else { continue }
            // The journal keeps a map's max_keys where a replay's capacity goes.
            let isMap = subject.kind == .map
            if let conflict = definition.conflict(
                withExisting: subject.kind, capacity: isMap ? nil : subject.capacity,
                retainMilliseconds: subject.retainMilliseconds, maxKeys: isMap ? subject.capacity : nil, durable: true,
                defaultReplayCapacity: config.defaultReplayCapacity)
            {
                return conflict
            }
        }
        return nil
    }
}

/// The running daemon's loop-side state. Loop thread only.
private final class Daemon: @unchecked Sendable {
    let loop: EventLoop
    let servers: LoopServers
    /// The server of the first loop, which owns the subjects.
    var server: Server { servers.owner }
    let logger: Logger
    let levelSetting: LogLevelSetting
    let reload: @Sendable () throws -> ServerConfig
    let notifier = SystemdNotifier.fromProcessEnvironment()
    var listener: TCPListener?
    var httpListener: TCPListener?
    var tlsListeners: TLSListeners?
    var signalSubscriptions = CompoundDisposable()
    var isStopping = false
    /// Whether `listen` has run (it runs once), and the timer that runs it at the cluster's
    /// deadline if the node has not caught up by then.
    var hasListened = false
    var listenDeadline: Disposable?
    /// When a stop closes what is still draining (`shutdown_timeout` after the signal).
    var stopDeadline: Disposable?
    var exitStatus: Int32 = 0

    init(
        loop: EventLoop, servers: LoopServers, logger: Logger, levelSetting: LogLevelSetting,
        reload: @escaping @Sendable () throws -> ServerConfig
    ) {
        self.loop = loop
        self.servers = servers
        self.logger = logger
        self.levelSetting = levelSetting
        self.reload = reload
    }

    /// Installs the signal handlers, then (in a later loop turn, so they are in place before
    /// anyone can read the "listening" line and signal us) creates the configured subjects
    /// and starts listening.
    func start() {
        signalSubscriptions.add(
            loop.signals([SIGTERM, SIGINT]).subscribe(next: { [self] number in
                stop(signal: number)
            }))
        signalSubscriptions.add(
            loop.signals([SIGHUP]).subscribe(next: { [self] _ in
                reloadConfiguration()
            }))
        let deadline = ContinuousClock.now.advanced(by: server.config.cluster.connectTimeout)
        loop.scheduler.schedule { [self] in listenOnceCaughtUp(before: deadline) }
    }

    /// In a cluster, the listeners open once the node holds the retained values its streams had
    /// (a client that moved here resumes by position as it would elsewhere) and has heard every
    /// live node (`SharedSubjects.whenCaughtUp`), or at `deadline` (`cluster_connect_timeout`
    /// after start), said in the log.
    private func listenOnceCaughtUp(before deadline: ContinuousClock.Instant) {
        guard let shared = server.shared else { return listen() }
        shared.whenCaughtUp { [self] in listen() }
        let scheduler = loop.scheduler
        let left = max(.zero, deadline - ContinuousClock.now)
        listenDeadline = scheduler.after(scheduler.now.advanced(by: left)) { [self] in
            guard !hasListened else { return }
            logger.warning("cluster: serving before this node has caught up with the cluster")
            listen()
        }
    }

    private func listen() {
        guard !isStopping, !hasListened else { return }
        hasListened = true
        listenDeadline?.dispose()
        let config = server.config
        do {
            try server.createConfiguredSubjects()
            // HTTP first: once the protocol's "listening" line is out, both front doors are open.
            if let address = config.httpListen {
                let httpListener = try TCPListener.bind(
                    host: address.host, port: Int(address.port), configuration: .init(), on: loop)
                servers.serveHTTP(httpListener)
                self.httpListener = httpListener
                logger.notice("runneld serving HTTP on \(Self.describe(httpListener, address))")
            }
            if config.servesTLS {
                let tlsListeners = try TLSListeners(config: config, servers: servers, logger: logger)
                self.tlsListeners = tlsListeners
                try tlsListeners.open(config: config, on: loop)
            }
            let listener = try TCPListener.bind(
                host: config.listen.host, port: Int(config.listen.port),
                configuration: .init(maxLineLength: config.maxLineBytes, deliversTLSHelloAsLine: true), on: loop)
            servers.serveLines(listener)
            self.listener = listener
            logger.notice(
                "runneld listening on \(Self.describe(listener, config.listen))",
                metadata: ["subjects": "\(server.subjects.count)", "loops": "\(servers.loops.count)"])
        } catch {
            logger.critical(
                "cannot start: \(error)",
                metadata: ["listen": "\(config.listen)", "http_listen": "\(config.httpListen?.description ?? "")"])
            exitStatus = 1
            signalSubscriptions.dispose()
            loop.shutdown()
            return
        }
        notify { try $0.ready(status: "listening") }
    }

    /// The address `listener` is bound to (the port chosen, for port 0), written as `address` is.
    private static func describe(_ listener: TCPListener, _ address: ListenAddress) -> String {
        address.isIPv6 ? "[\(listener.host)]:\(listener.port)" : "\(listener.host):\(listener.port)"
    }

    /// SIGTERM/SIGINT: stop accepting, flush and close every connection within
    /// `shutdown_timeout`, then end the loop. A second signal stops at once, and so does the
    /// timeout: a connection's own drain gives a peer that still reads more time
    /// (`TCPConnection.closeAfterFlush`), which a stop does not.
    func stop(signal number: Int32) {
        if isStopping {
            logger.warning("second stop signal: closing now")
            loop.shutdown()
            return
        }
        isStopping = true
        logger.notice("stopping", metadata: ["signal": "\(number)", "connections": "\(servers.connectionCount)"])
        notify { try $0.stopping() }
        listener?.close()
        listener = nil
        httpListener?.close()
        httpListener = nil
        tlsListeners?.close()
        let timeout = server.config.shutdownTimeout
        let scheduler = loop.scheduler
        stopDeadline = scheduler.after(scheduler.now.advanced(by: timeout)) { [self] in
            logger.warning(
                "shutdown_timeout passed: closing the connections still draining",
                metadata: ["connections": "\(servers.connectionCount)"])
            loop.shutdown()
        }
        servers.closeAllConnections(timeout: timeout) { [self] in
            stopDeadline?.dispose()
            signalSubscriptions.dispose()
            loop.shutdown()
        }
    }

    /// SIGHUP: re-read the configuration and apply what can change live.
    func reloadConfiguration() {
        notify { try $0.reloading() }
        defer { notify { try $0.ready(status: "reloaded") } }
        let newConfig: ServerConfig
        do {
            newConfig = try reload()
        } catch {
            logger.error("reload failed, keeping the running configuration: \(error)")
            return
        }
        let changes = servers.reload(newConfig)
        levelSetting.level = server.config.logLevel
        // Connections opened from now on; an open connection keeps the limit it was opened with.
        listener?.connectionConfiguration.maxLineLength = server.config.maxLineBytes
        tlsListeners?.reload(server.config)
        if changes.isEmpty {
            logger.notice("configuration reloaded: nothing changed")
        }
        for change in changes {
            logger.notice("configuration reloaded: \(change)")
        }
    }

    private func notify(_ send: (SystemdNotifier) throws -> Void) {
        guard let notifier else { return }
        do {
            try send(notifier)
        } catch {
            logger.warning("sd_notify failed: \(error)")
        }
    }
}
