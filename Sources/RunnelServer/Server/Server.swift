import Logging
import Runnel
import RunnelUV

/// The daemon's protocol server: named subjects, client sessions and their subscriptions, on
/// one libuv loop.
///
/// Loop thread only, apart from `init`: every libuv callback, every subject send and every
/// timer of every chain runs on the loop behind `scheduler`, which is `currentScheduler` there.
public final class Server: @unchecked Sendable {
    public let scheduler: LoopScheduler
    public internal(set) var config: ServerConfig
    let logger: Logger
    let registry = SubjectRegistry()
    let stats = ServerStats()
    private var sessions: [UInt64: Session] = [:]
    private var nextSessionID: UInt64 = 1
    private let started = ContinuousClock.now
    /// Called once the last session has closed during a shutdown.
    private var onDrained: (() -> Void)?
    /// Connections refused at `max_connections` since the last warning about it, and when that
    /// was: at most one warning a second, so a client hammering a full server cannot flood the log.
    private var refusedSinceWarning = 0
    private var lastRefusalWarning: ContinuousClock.Instant?

    public init(config: ServerConfig, scheduler: LoopScheduler, logger: Logger) {
        self.config = config
        self.scheduler = scheduler
        self.logger = logger
    }

    var sessionCount: Int { sessions.count }
    var uptimeSeconds: Int { Int((ContinuousClock.now - started).components.seconds) }

    // MARK: Subjects

    /// Creates the subjects the configuration lists; they exist before anyone connects.
    public func createConfiguredSubjects() throws {
        for subject in config.subjects where registry[subject.name] == nil {
            let kind = SubjectKind(rawValue: subject.kind.rawValue)!
            let initial = try subject.initialValueJSON.map { text -> RawJSON in
                try RawJSON(validating: text, maxDepth: config.maxDepth)
            }
            let capacity = kind == .replay ? (subject.capacity ?? config.defaultReplayCapacity) : nil
            _ = registry.create(name: subject.name, kind: kind, capacity: capacity, initial: initial)
        }
    }

    /// The subject `name` for `pub` or `sub`: created as a plain subject when it does not
    /// exist and `auto_create` is on.
    func subjectForUse(_ name: String) throws(ProtocolError) -> SubjectEntry {
        if let entry = registry[name] { return entry }
        guard config.autoCreate else {
            throw ProtocolError(.unknownSubject, "no subject '\(name)' (auto_create is off)")
        }
        try checkSubjectLimit()
        return registry.create(name: name, kind: .subject, capacity: nil, initial: nil)
    }

    func checkSubjectLimit() throws(ProtocolError) {
        guard registry.count < config.maxSubjects else {
            throw ProtocolError(.limit, "the server holds \(registry.count) subjects (max_subjects)")
        }
    }

    // MARK: Connections

    /// Takes a newly accepted connection: refused with a `closing` line when the server is at
    /// `max_connections`.
    public func accept(_ connection: TCPConnection) {
        guard sessions.count < config.maxConnections else {
            refusedSinceWarning += 1
            let now = ContinuousClock.now
            if lastRefusalWarning.map({ now - $0 >= .seconds(1) }) ?? true {
                logger.warning(
                    "refusing connections: at max_connections",
                    metadata: [
                        "peer": "\(connection.remoteAddress)", "max_connections": "\(config.maxConnections)",
                        "refused": "\(refusedSinceWarning)",
                    ])
                refusedSinceWarning = 0
                lastRefusalWarning = now
            }
            let line =
                "{\"ev\":\"closing\",\"code\":\"limit\",\"message\":\"too many connections: the server is at "
                + "max_connections (\(config.maxConnections)); try again later\"}\n"
            Array(line.utf8).withUnsafeBytes { _ = connection.write(copying: $0) }
            connection.closeAfterFlush(timeout: .seconds(1))
            return
        }
        let session = Session(id: nextSessionID, server: self, connection: connection)
        nextSessionID += 1
        sessions[session.id] = session
        connection.delegate = SessionConnectionDelegate(session: session)
        connection.startReading()
        logger.debug(
            "connection opened", metadata: ["connection": "\(session.id)", "peer": "\(connection.remoteAddress)"])
    }

    func sessionDidClose(_ session: Session) {
        guard sessions.removeValue(forKey: session.id) != nil else { return }
        logger.debug("connection closed", metadata: ["connection": "\(session.id)"])
        if sessions.isEmpty, let onDrained {
            self.onDrained = nil
            onDrained()
        }
    }

    /// Flushes and closes every connection, waiting at most `timeout` for output to drain, then
    /// calls `completion` (at once if there are none).
    public func closeAllConnections(timeout: Duration, completion: @escaping () -> Void) {
        if sessions.isEmpty {
            completion()
            return
        }
        onDrained = completion
        for session in sessions.values {
            session.disposeAll()
            session.connection.closeAfterFlush(timeout: timeout)
        }
    }

    // MARK: Configuration

    /// Applies what can change live from a re-read configuration; returns what changed.
    @discardableResult
    public func reload(_ newConfig: ServerConfig) -> [ConfigChange] {
        let changes = newConfig.changes(from: config)
        var applied = newConfig
        // The listening address is fixed for the life of the process.
        applied.listen = config.listen
        config = applied
        do {
            try createConfiguredSubjects()
        } catch {
            logger.error("reload: cannot create a configured subject", metadata: ["error": "\(error)"])
        }
        return changes
    }

    // MARK: Stages

    /// The subscription's signal: `source` through the stage list, compiled whole before
    /// anything is subscribed. `label` names the subscription's subject or pattern.
    func compileChain(_ stages: [JSONValue], source: Signal<Message>, label: SubjectLabel) throws(ProtocolError)
        -> Signal<Message>
    {
        guard !stages.isEmpty else { return source }
        let compiler = StageCompiler(
            scheduler: scheduler, limits: StageLimits(config: config), defaultLabel: label,
            lookup: { [unowned self] name throws(ProtocolError) in try subjectForUse(name).subject })
        return try compiler.compile(stages, source: source)
    }
}

/// Routes a connection's callbacks to its session.
final class SessionConnectionDelegate: TCPConnectionDelegate {
    let session: Session
    init(session: Session) { self.session = session }

    func connection(_ connection: TCPConnection, didReadLine line: UnsafeRawBufferPointer) {
        session.handleLine(line)
    }

    func connection(_ connection: TCPConnection, didDiscardLongLine byteCount: Int) {
        session.handleLongLine(byteCount: byteCount)
    }

    /// End of input is the client going away (a close and a half-close look alike): its
    /// subscriptions are disposed at once; replies already written still drain before the close.
    func connectionDidEndInput(_ connection: TCPConnection) {
        session.inputDidEnd()
    }

    func connectionDidClose(_ connection: TCPConnection) {
        session.connectionDidClose()
    }
}
