import Logging
import Runnel
import RunnelExpression
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// The daemon's protocol server: the subject store, client sessions and their subscriptions,
/// on one libuv loop. Transports (a TCP connection through `serve(_:)`, ...) become sessions
/// through `accept(_:)`.
///
/// Loop thread only, apart from `init`: every libuv callback the server sees, every subject send
/// and every timer of every chain runs on the loop behind `scheduler`, which is
/// `currentScheduler` there (other loops' callbacks run on their own threads).
public final class Server: SessionOwner, @unchecked Sendable {
    public let scheduler: LoopScheduler
    public internal(set) var config: ServerConfig
    /// The tokens `config` accepts and their rights; rebuilt on reload.
    package private(set) var access: AccessList
    package let logger: Logger
    package let subjects: any SubjectStore
    /// The cluster `subjects` are shared with; nil standalone.
    package let shared: (any SharedSubjects)?
    package var isClustered: Bool { shared != nil }
    /// Whether the subjects' link to their cluster is down: this server's own, or on a loop
    /// that does not own the subjects, the owner's as it last told (`SubjectReplicas`).
    package var isClusterLinkDown: Bool {
        if let shared { return !shared.isLinked }
        return replicas?.isOwnersLinkDown ?? false
    }
    /// What the servers of this process share: the connection limits, the session numbers.
    package let group: ServerGroup
    package let stats = ServerStats()
    /// How long one publish's stage evaluations may hold the loop (`max_publish_eval_ms`).
    package let publishEvaluationBound: PublishEvaluationBound
    /// Publishers paused by lagging subscribers, and the counts of pauses.
    package let publisherPauses: PublisherPauses
    /// One compiled expression for all identical ones in the chains (`compileChain`).
    let expressionInterner = ExpressionInterner(clock: Expression.systemClock)
    /// The counts `$sys.occupancy.S` reports.
    let occupancy: OccupancyTracker
    /// Where the group's other servers ask for replicas of this one's subjects, when it owns
    /// them (the group's first member: decision 0011).
    package let replicaSource: ReplicaSource
    /// This loop's replicas of the subjects another member owns; nil on the owner.
    private(set) var replicas: SubjectReplicas?
    private(set) var sessions: [UInt64: Session] = [:]
    /// Each configured token's evaluation budget on this loop, drawing on the token's pool over
    /// every loop (`ServerGroup.tokenPool`), by the token's digest (`tokenEvaluationBudget`).
    private var tokenEvaluationBudgets: [[UInt8]: EvaluationBudget] = [:]
    /// The front door over the core (RunnelHTTP's), once the daemon has opened it: its
    /// connections count with the sessions, and it answers the line port's HTTP requests.
    package var frontDoor: (any FrontDoor)?
    /// The loops connections are spread over, when there are several (`loops`); the server
    /// runs on the first, `scheduler`'s. Set before serving.
    public var loopGroup: LoopGroup?
    /// The server's own timer, for the deadlines it keeps in seconds.
    private let sweep = ServerSweep()
    /// The sessions `login_timeout` will close unless they log in first.
    private var loginDeadlines = SessionDeadlines()
    /// The sessions authenticated with a JWT, closed when it expires unless they `auth` again.
    private var tokenExpiries = SessionDeadlines()
    private let started = ContinuousClock.now
    /// When the server started, in seconds since the Unix epoch.
    let startTimeUnixSeconds = ProcessStatistics.wallClockSeconds()
    /// Called once the last session has closed during a shutdown.
    private var onDrained: (() -> Void)?

    public convenience init(config: ServerConfig, scheduler: LoopScheduler, logger: Logger) {
        self.init(config: config, scheduler: scheduler, logger: logger, subjects: MemorySubjectStore())
    }

    /// A server on `scheduler`'s loop, one of `group`'s (a group of its own when nil).
    package init(
        config: ServerConfig, scheduler: LoopScheduler, logger: Logger, subjects: any SubjectStore,
        group: ServerGroup? = nil
    ) {
        self.group = group ?? ServerGroup(config: config, logger: logger)
        self.config = config
        self.access = AccessList(config: config)
        self.scheduler = scheduler
        self.logger = logger
        self.subjects = subjects
        self.shared = subjects.sharing
        self.publishEvaluationBound = PublishEvaluationBound(milliseconds: config.maxPublishEvalMs, clock: scheduler)
        self.publisherPauses = PublisherPauses(clock: scheduler)
        let occupancy = OccupancyTracker(store: subjects.local, scheduler: scheduler)
        self.occupancy = occupancy
        if let shared {
            let peers = shared.occupancyPeers
            occupancy.peers = peers
            peers.localCount = { [weak occupancy] subject in occupancy?.localCount(of: subject) ?? 0 }
            peers.othersChanged = { [weak occupancy] subject in occupancy?.othersChanged(subject) }
            shared.adopted = { [weak occupancy] subject in occupancy?.subjectAppeared(subject) }
        }
        let replicaSource = ReplicaSource(loop: scheduler, pauses: publisherPauses, config: config)
        self.replicaSource = replicaSource
        occupancy.otherLoopsPatternReach = { [weak replicaSource] in replicaSource?.patternReach(of: $0) ?? 0 }
        shared?.linkChanged = { [weak replicaSource] up in replicaSource?.linkChanged(up: up) }
        applyRetentionLimits()
        replicaSource.owner = self
        subjects.local.adopted = { [weak replicaSource] entry in replicaSource?.subjectMade(entry) }
        if let owner = self.group.join(self) {
            let replicas = SubjectReplicas(
                owner: owner.replicaSource.inbox, loop: scheduler, retained: subjects.retained, pauses: publisherPauses,
                publishBound: publishEvaluationBound, clustered: owner.isClustered)
            replicas.missed = { [weak self] subject, count in self?.noteMissed(count, of: subject) }
            self.replicas = replicas
        }
    }

    /// The shared parts sessions are handed (`SessionContext`), made on first use.
    private var madeSessionContext: SessionContext?
    var sessionContext: SessionContext {
        if let madeSessionContext { return madeSessionContext }
        let made = SessionContext(
            scheduler: scheduler, logger: logger, subjects: subjects, shared: shared, stats: stats,
            publishBound: publishEvaluationBound, pauses: publisherPauses, interner: expressionInterner,
            occupancy: occupancy, replicas: replicas, owner: self)
        madeSessionContext = made
        return made
    }

    /// What the configuration says now, as sessions read it; remade on reload.
    private(set) lazy var sessionSettings = SessionSettings(config: config, access: access)

    /// This server's open client connections, of every front door (the process's, over every
    /// loop, are `group.admission.openCount`).
    package var connectionCount: Int { sessions.count + (frontDoor?.connectionCount ?? 0) }
    /// The open connections by what carries them: sessions by `SessionTransport.transportName`,
    /// and the HTTP front door's own as "http".
    var connectionCountsByTransport: [String: Int] {
        var counts: [String: Int] = [:]
        for session in sessions.values { counts[session.transport.transportName, default: 0] += 1 }
        if let frontDoor { counts["http", default: 0] += frontDoor.connectionCount }
        return counts
    }
    var uptimeSeconds: Int { Int((ContinuousClock.now - started).components.seconds) }

    // MARK: Subjects

    /// Creates the subjects the configuration lists that do not exist yet; they exist before
    /// anyone connects. `max_subjects` does not apply to them. A durable subject restored from
    /// `data_dir` must agree with its `[[subjects]]` entry (kind, capacity, a map's shape,
    /// durable). Each gets its table's `slow_consumer`, existing ones too (so a reload applies
    /// a new one). Only the server that owns the subjects makes them: another loop's reads
    /// them through replicas.
    public func createConfiguredSubjects() throws {
        scheduler.assertOnLoopThread()
        guard replicas == nil else { return }
        for subject in config.subjects {
            let capacity = subject.effectiveCapacity(defaultReplayCapacity: config.defaultReplayCapacity)
            if let existing = subjects[subject.name] {
                if let conflict = subject.conflict(
                    withExisting: existing.kind, capacity: existing.capacity,
                    retainMilliseconds: existing.retainMilliseconds, maxKeys: existing.map?.maxKeys,
                    durable: existing.isDurable, defaultReplayCapacity: config.defaultReplayCapacity)
                {
                    throw conflict
                }
                existing.label.slowConsumer = subject.slowConsumer
                continue
            }
            let initial = try subject.initialValueJSON.map { text -> RawJSON in
                try RawJSON(validating: text, maxDepth: config.maxDepth)
            }
            let entry =
                if let maxKeys = subject.maxKeys {
                    subjects.createMap(
                        subject.name, ttlMilliseconds: subject.retainMilliseconds, maxKeys: maxKeys,
                        durable: subject.durable)
                } else {
                    subjects.create(
                        subject.name, kind: subject.kind, capacity: capacity,
                        retainMilliseconds: subject.retainMilliseconds, initial: initial, durable: subject.durable)
                }
            entry.label.slowConsumer = subject.slowConsumer
        }
    }

    // MARK: Connections

    /// Arms the server's sweep, once: called as a listener starts serving.
    package func startSweep() {
        sweep.start(on: scheduler) { [weak self] in
            guard let self else { return }
            let now = ContinuousClock.now
            for session in loginDeadlines.takeExpired(at: now) { session.loginTimedOut() }
            for session in tokenExpiries.takeExpired(at: now) { session.tokenExpired() }
            frontDoor?.sweep(now)
            subjects.retained.dropExpired()
        }
    }

    /// Takes a new client connection as a session, or refuses it with a `closing` line when
    /// the server is at `max_connections` or its address at `max_connections_per_address`.
    func accept(_ transport: any SessionTransport) {
        scheduler.assertOnLoopThread()
        let host = ConnectionAdmission.host(of: transport.peerDescription)
        if let refusal = group.admission.admit(from: host) {
            _ = transport.write(.closing(refusal))
            transport.closeAfterFlush(timeout: .seconds(1))
            return
        }
        openSession(over: transport, grant: nil, countingHost: host)
    }

    /// Opens a session over `transport` without the connection limits, for a connection
    /// another front door admitted already (an HTTP request turned into a stream, which that
    /// front door then stops counting); `grant` when that front door checked the token (else
    /// `login_timeout` applies). `host` is the address `accept` counted the connection against,
    /// which the session gives back when it closes.
    package func openSession(over transport: any SessionTransport, grant: TokenGrant?, countingHost host: String? = nil)
    {
        scheduler.assertOnLoopThread()
        let session = Session(
            id: group.nextSessionID(), context: sessionContext, settings: sessionSettings, transport: transport)
        if let grant { session.grant = grant }
        session.countedHost = host
        sessions[session.id] = session
        // A stream the front door opened with the token has sent its request already.
        if grant == nil { session.startLoginWait() }
        transport.start(receiver: session)
        logger.debug(
            "connection opened", metadata: ["connection": "\(session.id)", "peer": "\(transport.peerDescription)"])
    }

    func sessionAwaitsLogin(_ session: Session, until deadline: ContinuousClock.Instant) {
        loginDeadlines.add(session, deadline: deadline)
    }

    func sessionStoppedAwaitingLogin(_ session: Session) { loginDeadlines.remove(session) }

    func sessionToken(of session: Session, expiresAt deadline: ContinuousClock.Instant?) {
        if let deadline { tokenExpiries.add(session, deadline: deadline) } else { tokenExpiries.remove(session) }
    }

    func sessionDidClose(_ session: Session) {
        tokenExpiries.remove(session)
        guard sessions.removeValue(forKey: session.id) != nil else { return }
        if let host = session.countedHost { group.admission.release(host) }
        logger.debug("connection closed", metadata: ["connection": "\(session.id)"])
        reportIfDrained()
    }

    /// Calls the shutdown's completion once no connection of any front door is open.
    package func reportIfDrained() {
        if connectionCount == 0, let onDrained {
            self.onDrained = nil
            onDrained()
        }
    }

    /// Flushes and closes every connection, waiting at most `timeout` for output to drain, then
    /// calls `completion` (at once if there are none).
    public func closeAllConnections(timeout: Duration, completion: @escaping () -> Void) {
        scheduler.assertOnLoopThread()
        if connectionCount == 0 {
            completion()
            return
        }
        onDrained = completion
        for session in sessions.values { session.close(flushingWithin: timeout) }
        frontDoor?.closeAllConnections(flushingWithin: timeout)
    }

    // MARK: Configuration

    /// Applies what can change live from a re-read configuration; returns what changed.
    @discardableResult
    public func reload(_ newConfig: ServerConfig) -> [ConfigChange] {
        scheduler.assertOnLoopThread()
        let changes = newConfig.changes(from: config)
        var applied = newConfig
        // The listening addresses are fixed for the life of the process.
        applied.listen = config.listen
        applied.httpListen = config.httpListen
        let tokensChanged =
            applied.authTokens != config.authTokens || applied.tokens != config.tokens
            || !applied.verifiesJWTsAs(config)
        config = applied
        group.admission.configure(applied)
        applyRetentionLimits()
        if tokensChanged { access = AccessList(config: applied) }
        let settings = SessionSettings(config: applied, access: access)
        sessionSettings = settings
        for session in Array(sessions.values) { session.settingsDidChange(to: settings) }
        applyEvaluationLimits()
        do {
            try createConfiguredSubjects()
        } catch {
            logger.error("reload: cannot create a configured subject", metadata: ["error": "\(error)"])
        }
        return changes
    }

    /// `max_retained_bytes` and `max_replay_bytes` as the subject store applies them, and a
    /// cluster's limits on values from other nodes.
    private func applyRetentionLimits() {
        subjects.retained.maxBytes = config.maxRetainedBytes
        subjects.retained.maxReplayBytes = config.maxReplayBytes
        replicaSource.limits.configure(config)
        shared?.apply(
            maxSubjects: config.maxSubjects, maxDepth: config.maxDepth, publishBound: publishEvaluationBound)
    }

    // MARK: Evaluation budgets

    /// Gives the publish bound and every token's evaluation budget the configuration's values
    /// (a reload; each session's own budget takes them in `Session.contextDidChange`): they
    /// apply at once, to subscriptions made before too. The budgets of tokens no longer
    /// configured go (their connections are closed).
    private func applyEvaluationLimits() {
        publishEvaluationBound.configure(milliseconds: config.maxPublishEvalMs)
        let configured = Set(access.grants.compactMap(\.digest))
        tokenEvaluationBudgets = tokenEvaluationBudgets.filter { configured.contains($0.key) }
        group.configureTokenPools(keeping: configured, config: config)
    }

    /// The evaluation budget all connections of `grant`'s token on this loop share, drawing on
    /// the token's pool that every loop's share (`TokenStepPool`), made when the first of them
    /// authenticates; nil for the grant of a server without tokens, whose connections have
    /// nothing in common.
    func tokenEvaluationBudget(for grant: TokenGrant?) -> EvaluationBudget? {
        guard let digest = grant?.digest else { return nil }
        if let budget = tokenEvaluationBudgets[digest] { return budget }
        let budget = EvaluationBudget(
            drawing: group.tokenPool(for: digest, config: config, clock: scheduler), clock: scheduler)
        tokenEvaluationBudgets[digest] = budget
        return budget
    }
}
