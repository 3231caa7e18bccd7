import Logging
import Runnel
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// What a session uses of its server, handed to it as it opens, in two halves: this one, the
/// server's shared parts that never change (the subject store, the counters, the publish
/// bound, the paused publishers, the logger, the scheduler, the expression interner) and the
/// few calls back into the server a session makes (`owner`); and `SessionSettings`, what the
/// configuration says now, which a reload hands every session anew
/// (`Session.settingsDidChange`). So a session reads the configuration it was last handed,
/// never the server's fields.
///
/// Thread rules: loop thread only, like the sessions that read it; its fields never change.
/// Lifetime rule: the server makes one and holds it; every session holds it strongly (nothing
/// in it holds a session). `owner` is unowned: the server outlives every session.
final class SessionContext: @unchecked Sendable {
    let scheduler: LoopScheduler
    let logger: Logger
    let subjects: any SubjectStore
    /// The cluster `subjects` are shared with; nil standalone.
    let shared: (any SharedSubjects)?
    let stats: ServerStats
    /// How long one publish's stage evaluations may hold the loop (`max_publish_eval_ms`).
    let publishBound: PublishEvaluationBound
    /// Publishers paused by lagging subscribers.
    let pauses: PublisherPauses
    /// One compiled expression for all identical ones in the chains (`compileChain`).
    let interner: ExpressionInterner
    /// The counts `$sys.occupancy.S` reports (`OccupancyTracker`).
    let occupancy: OccupancyTracker
    /// On a loop that does not own the subjects, its replicas of them; nil on the owner.
    let replicas: SubjectReplicas?
    /// What a session tells or asks its server.
    unowned let owner: any SessionOwner

    init(
        scheduler: LoopScheduler, logger: Logger, subjects: any SubjectStore, shared: (any SharedSubjects)?,
        stats: ServerStats,
        publishBound: PublishEvaluationBound, pauses: PublisherPauses, interner: ExpressionInterner,
        occupancy: OccupancyTracker, replicas: SubjectReplicas?, owner: any SessionOwner
    ) {
        self.scheduler = scheduler
        self.logger = logger
        self.subjects = subjects
        self.shared = shared
        self.stats = stats
        self.publishBound = publishBound
        self.pauses = pauses
        self.interner = interner
        self.occupancy = occupancy
        self.replicas = replicas
        self.owner = owner
    }

    // MARK: Subjects

    /// The subject `name` for `pub`, `sub` or a stage that names it: created as a plain
    /// subject when it does not exist and `auto_create` is on.
    func subjectForUse(_ name: String, under settings: SessionSettings) throws(ProtocolError) -> SubjectEntry {
        if let entry = subjects[name] { return entry }
        if SystemSubjects.isReserved(name) { return try occupancy.entry(named: name) }
        guard settings.config.autoCreate else {
            throw ProtocolError(.unknownSubject, "no subject '\(name)' (auto_create is off)")
        }
        try checkSubjectLimit(under: settings)
        try subjects.checkShared()
        return subjects.create(
            name, kind: .subject, capacity: nil, retainMilliseconds: nil, initial: nil, durable: false)
    }

    /// `limit` when the server holds `max_subjects` subjects.
    func checkSubjectLimit(under settings: SessionSettings) throws(ProtocolError) {
        guard subjects.count < settings.config.maxSubjects else {
            throw ProtocolError(.limit, "the server holds \(subjects.count) subjects (max_subjects)")
        }
    }

    /// The subject `pub` names, when `grant` may publish to it: an existing one as it is (its
    /// name was checked when it was created), else a valid name, created when `auto_create` is
    /// on (`made`: the answer about it then waits for its making, which in a cluster may lose to
    /// another node's). A refusal creates nothing. `settings` is read only to create (the
    /// server's are a copy per read, too dear for every `pub`).
    func publishTarget(named name: String, for grant: TokenGrant, under settings: @autoclosure () -> SessionSettings)
        throws(ProtocolError) -> (entry: SubjectEntry, made: Bool)
    {
        try SystemSubjects.checkWritable(name)
        if let entry = subjects[name] {
            try grant.checkPublish(to: name)
            return (entry, false)
        }
        try SubjectName.check(name)
        try grant.checkPublish(to: name)
        return (try subjectForUse(name, under: settings()), true)
    }

    /// The map a keyed `pub` (or HTTP `?key=`) names, when `grant` may publish to it: it must
    /// exist and be a map (a keyed write never creates a subject).
    func mapTarget(named name: String, for grant: TokenGrant) throws(ProtocolError) -> SubjectEntry {
        try SystemSubjects.checkWritable(name)
        try grant.checkPublish(to: name)
        guard let entry = subjects[name] else {
            throw ProtocolError(
                .badRequest,
                "field 'key' applies only to kind 'map', and there is no subject '\(name)' "
                    + "(create it with kind 'map')")
        }
        guard entry.map != nil else { throw Publishing.notAMap(entry) }
        return entry
    }

    // MARK: Stages

    /// The subscription's signal: `source` through the stage list, compiled whole before
    /// anything is subscribed, its evaluations charged to `account`. `label` names the
    /// subscription's subject or pattern; `lookup` finds the subjects stages name
    /// (`Session.stageLookup`, which checks the token's rights). Time stages run on
    /// `timeScheduler` when given (a `since` replay's, `Session+History`), else on the loop's.
    func compileChain(
        _ stages: [JSONValue], source: Signal<Message>, label: SubjectLabel, account: EvaluationAccount,
        lookup: @escaping SubjectLookup, timeScheduler: (any Scheduler)? = nil, under settings: SessionSettings
    ) throws(ProtocolError) -> Signal<Message> {
        guard !stages.isEmpty else { return source }
        let compiler = StageCompiler(
            scheduler: timeScheduler ?? scheduler, limits: settings.stageLimits, defaultLabel: label, account: account,
            interner: interner, lookup: lookup)
        return try compiler.compile(stages, source: source)
    }
}

/// What the configuration says now, as sessions read it: handed to each session as it opens
/// and again on every reload. A value: a session's copy changes only when it is handed a new
/// one. Thread rules: loop thread only. Lifetime rule: each session holds its own copy.
struct SessionSettings {
    let config: ServerConfig
    /// `config.softPendingLimit`, worked out once: every delivery reads it.
    let softPendingLimit: Int
    /// The unsent output past which a session's requests are held while some wait for another
    /// loop (`Session.inputLimit`): the soft limit, at most 512 KiB.
    let crossingLimit: Int
    /// The tokens `config` accepts and their rights.
    let access: AccessList
    /// The limits chains are compiled under.
    let stageLimits: StageLimits

    /// How far ahead of another loop's answers a session reads (`crossingLimit`): with the
    /// soft limit alone a publisher runs megabytes ahead of the subjects' owner, and runneld's
    /// working set outgrows the caches (bench/README.md, "Crossings between loops").
    static let crossingWindow = 524_288

    /// The window `config` allows: the soft limit, at most `crossingWindow`. Also how far an
    /// owner's values run ahead of a loop reading them before their publisher is paced
    /// (`ReaderLink`).
    static func crossingLimit(_ config: ServerConfig) -> Int {
        min(config.softPendingLimit, crossingWindow)
    }

    init(config: ServerConfig, access: AccessList) {
        self.config = config
        self.softPendingLimit = config.softPendingLimit
        crossingLimit = Self.crossingLimit(config)
        self.access = access
        self.stageLimits = StageLimits(config: config)
    }
}

/// The calls a session makes back into what owns it (the server). Loop thread only.
protocol SessionOwner: AnyObject {
    /// The session's transport closed: it is to be forgotten.
    func sessionDidClose(_ session: Session)
    /// The session awaits its login until `deadline` (`login_timeout`).
    func sessionAwaitsLogin(_ session: Session, until deadline: ContinuousClock.Instant)
    /// The session logged in, or is closing: it no longer awaits its login.
    func sessionStoppedAwaitingLogin(_ session: Session)
    /// The session's token expires at `deadline` (a JWT's); nil: it no longer expires.
    func sessionToken(of session: Session, expiresAt deadline: ContinuousClock.Instant?)
    /// The evaluation budget all connections of `grant`'s token share (nil for none).
    func tokenEvaluationBudget(for grant: TokenGrant?) -> EvaluationBudget?
    /// Calls `then` with the `stats` reply's figures, every loop's added up: at once, or once
    /// the other loops have answered (on this loop).
    func gatherStatsReport(then: @escaping (ServerStatsReport) -> Void)
    /// The subjects `list` gives `grant` under `prefix` (`Server.listSubjects`).
    func listSubjects(prefix: String, for grant: TokenGrant, then: @escaping ([SubjectListing]) -> Void)
    /// Answers a first line of a front door's protocol on `connection`, and closes it
    /// (`FrontDoor`); false for a line of the line protocol.
    func answer(toFirstLine line: UnsafeRawBufferPointer, on connection: any ByteStream) -> Bool
}
