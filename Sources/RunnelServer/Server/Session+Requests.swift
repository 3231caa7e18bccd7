import Runnel
import RunnelJSON
import RunnelProtocol

/// The protocol's requests. Each handler validates everything before it changes anything, and
/// throws a `ProtocolError` for the reply; a handler that succeeds writes its own reply, a
/// `SessionReply` (`write(_:)`, or `replyWhenWritten` after a durable change). Every
/// change to a subject goes through the server's subject store. The token's rights are checked
/// before a request reads, creates or changes anything: a refusal is `unauthorized` naming the
/// missing right.
extension Session {
    func handle(_ request: Request) throws(ProtocolError) {
        context.scheduler.assertOnLoopThread()
        let operation = try request.operation()
        if grant == nil && operation != .known(.auth) {
            throw Self.authenticateFirst
        }
        guard case .known(let op) = operation else {
            if case .unknown(let name) = operation { throw ProtocolError(.unknownOp, "unknown op '\(name)'") }
            return
        }
        switch op {
        case .pub: try publish(request)
        case .sub: try subscribe(SubscribeRequest(parsing: request))
        case .unsub: try unsubscribe(request)
        case .create:
            try rights.checkManage("create subjects")
            try subjects.checkShared()
            try create(request)
        case .complete:
            try rights.checkManage("complete subjects")
            try subjects.checkShared()
            try end(request, error: false)
        case .error:
            try rights.checkManage("error subjects")
            try subjects.checkShared()
            try end(request, error: true)
        case .delete:
            try rights.checkManage("delete subjects")
            try subjects.checkShared()
            try end(request, delete: true)
        case .list: try list(request)
        case .stats:
            try rights.checkManage("read the server's stats")
            writeStats(request)
        case .ping: write(SessionReply(ref: request.ref, .done))
        case .auth: try authenticate(request)
        }
    }

    /// What a request before `auth` gets, when the server asks for tokens.
    static var authenticateFirst: ProtocolError {
        ProtocolError(.unauthorized, "authenticate first with {\"op\":\"auth\",\"token\":...}")
    }

    /// The grant of an authenticated session: `handle` refuses every request but `auth`
    /// before there is one.
    var rights: TokenGrant {
        guard let grant else { preconditionFailure("a request other than auth handled before authentication") }
        return grant
    }

    // MARK: pub

    private func publish(_ request: Request) throws(ProtocolError) {
        if _slowPath(request.scanned[.key] != nil || request.scanned[.delete] != nil) {
            return try publishKeyed(request)
        }
        if let replicas = context.replicas { return try publishThroughOwner(request, replicas: replicas) }
        let (entry, made) = try publishTarget(request)
        if _slowPath(entry.map != nil) { throw Publishing.keyNeeded(entry) }
        guard let ref = request.ref else {
            // The common case, kept apart: no reply, nothing to count. (One call shared with
            // the branch below made every pub dearer.)
            try Publishing.publish(
                request.raw(.value) ?? .null, members: request.scanned.valueMembers, to: entry, in: subjects,
                counting: stats, bounding: publishBound, by: publisher)
            return
        }
        // A plain subject's receivers are counted before the value goes out; a durable one's
        // when the reply is written, after the disk. A subject this pub made waits for its
        // making (in a cluster, a definition another node wrote first in another shape makes
        // the reply `kind_mismatch`: the value did not reach that subject).
        let waits = made || subjects.repliesWait(forValueOf: entry)
        let receivers = waits ? 0 : entry.subscriberCount
        try Publishing.publish(
            request.raw(.value) ?? .null, members: request.scanned.valueMembers, to: entry, in: subjects,
            counting: stats, bounding: publishBound, by: publisher)
        if waits {
            replyWhenWritten(ref: ref) { .published(receivers: entry.subscriberCount) }
        } else {
            write(SessionReply(ref: ref, .published(receivers: receivers)))
        }
    }

    /// The subject a `pub` names. A publisher usually sends to the same subject line after
    /// line: when the field's bytes are exactly the last one's (its JSON string as the server
    /// encodes it), that entry is used without decoding the name into a `String` and hashing
    /// it, nor checking the token's rights again (the cache is cleared when they change). A name
    /// already registered was validated when it was created, so the slow path validates only
    /// names it may create. `made`: this request made the subject.
    private func publishTarget(_ request: Request) throws(ProtocolError) -> (entry: SubjectEntry, made: Bool) {
        if let cached = lastPublishTarget, !cached.isDeleted, let field = request.scanned.subject,
            cached.label.json.hasSameBytes(as: request.scanned.bytes(field))
        {
            return (cached, false)
        }
        let target = try context.publishTarget(
            named: try request.requiredString(.subject), for: rights, under: settings)
        lastPublishTarget = target.entry
        return target
    }

    // MARK: sub / unsub

    /// Subscribes as `request` asks, under the protocol's rules, whoever made it (a `sub`
    /// line, or a stream's query): its reply (`SessionReply.Outcome.subscribed`) goes out
    /// before any of its events. `caughtUp`: it waited once for this node to catch up with its
    /// `from` (`subscribeCaughtUp`). `replica`: the replica of its subject it waited for, on a
    /// loop that does not own the subjects (`subscribeReplicated`).
    func subscribe(
        _ request: SubscribeRequest, caughtUp: Bool = false, replica: SubjectEntry? = nil
    ) throws(ProtocolError) {
        let pattern = try request.pattern()
        let target = pattern.text
        if pattern.isWildcard { try SystemSubjects.checkReadable(pattern: target) }
        let sid: String
        if let given = request.sid {
            guard !given.isEmpty else { throw ProtocolError(.badRequest, "field 'sid' must not be empty") }
            guard subscriptions[given] == nil else {
                throw ProtocolError(.duplicateSid, "sid '\(given)' is already in use on this connection")
            }
            sid = given
        } else {
            sid = subscriptions.freshSid()
        }
        var stages = request.stages
        let from = try request.fromPosition()
        if from != nil && pattern.isWildcard {
            throw ProtocolError(.badRequest, "field 'from' applies to one subject, not to a pattern")
        }
        let positions = request.positions ?? false || from != nil
        guard subscriptions.count < settings.config.maxSubscriptionsPerConnection else {
            throw ProtocolError(
                .limit,
                "connection holds \(subscriptions.count) subscriptions (max_subscriptions_per_connection)")
        }
        let pinned = SessionSubscription.pinnedBytes(sid: sid, stagesByteCount: request.stagesByteCount)
        guard subscriptions.pinnedBytes + pinned <= settings.config.maxSubscriptionBytes else {
            throw ProtocolError(
                .limit,
                "connection's subscriptions hold \(subscriptions.pinnedBytes) bytes of sids and stages; this one's \(pinned) "
                    + "would pass max_subscription_bytes (\(settings.config.maxSubscriptionBytes))")
        }
        let admitted = try subjectFilter(checking: pattern)
        let entry: SubjectEntry?
        if pattern.isWildcard {
            entry = nil
        } else if let found = try subjectToRead(target, for: request, caughtUp: caughtUp, replica: replica) {
            entry = found
        } else {
            return holdInputWhileCatchingUp()
        }
        try checkTimeBounds(request, on: entry, from: from)
        // A cluster keeps a retained subject's values, and the positions `from` names.
        // (Not the server's own subjects, which it keeps alone: `SystemSubjects`.)
        if from != nil || entry?.retainsValues == true && !SystemSubjects.isReserved(target) {
            try subjects.checkShared()
        }
        // A position another node gave, beyond what this node delivered yet: the request (and
        // those after it) waits until this node has, then runs again (`subscribeCaughtUp`).
        if let from, let entry, !caughtUp, let shared = context.shared,
            shared.whenDelivered(
                upTo: from, of: entry, within: Self.catchUpWait,
                then: { [weak self] in self?.subscribeCaughtUp(request) })
        {
            return holdInputWhileCatchingUp()
        }
        var source: Signal<Message> = entry?.subject ?? subjects.patternSignal(pattern, admitting: admitted)
        // What a subject keeps for `retain_s` is not replayed past it. The server's clock, read
        // once: `since` and `until` are measured from the same instant.
        let now = subjects.retained.clock.now()
        entry?.dropExpired(now: now)
        // Resuming: the subject's usual replay, less what the client had (seqs only grow). A
        // map's opening is its snapshot or its changes since `from`, then `synced`.
        var resumed = from.flatMap { from in entry.map { $0.canResume(after: from) } }
        if let entry, entry.map != nil {
            // A first stage that keeps it to one key: that key's changes only, looked up.
            let key = MapKeyFilter.key(of: stages, limits: settings.stageLimits)
            if key != nil { stages.removeFirst() }
            (source, resumed) = entry.mapOpening(from: from, only: key)
        } else if let from, resumed == true {
            source = source.skip(while: { ($0.seq ?? 0) <= from.seq })
        }
        let isTimeBounded = request.since != nil || request.until != nil
        var catchUp: CatchUp?
        if isTimeBounded {
            if let since = request.since {
                resumed = entry?.retainsEverything(since: since)
                if !stages.isEmpty { catchUp = self.catchUp(since: since, now: now) }
            }
            source = timeBounded(source, since: request.since, until: request.until, now: now, catchingUp: catchUp)
        }
        let subscription = SessionSubscription(
            sid: sid, entry: entry, pattern: pattern, isMap: entry?.map != nil, sendsPositions: positions,
            sendsTimes: request.timestamps ?? false,
            conflates: request.conflate ?? false)
        let lookup = stageLookup(for: subscription)
        // Where the subscription's sink goes: a chain it shares, or one of its own.
        let start: (any Subscriber<Message>) -> Disposable
        if let entry, !isTimeBounded,
            let (shared, entrance) = try sharedChain(stages, on: entry, from: from, lookup: lookup)
        {
            start = { [evaluationAccount] sink in shared.join(sink, payer: evaluationAccount, through: entrance) }
        } else {
            let compile = { (source: Signal<Message>) throws(ProtocolError) -> Signal<Message> in
                try self.context.compileChain(
                    stages, source: source, label: entry?.label ?? SubjectLabel(target),
                    account: self.evaluationAccount,
                    lookup: lookup, timeScheduler: catchUp?.scheduler, under: self.settings)
            }
            // A map's removals and `synced` (which a pattern may meet too) go round the stages.
            let chain =
                if !stages.isEmpty && (subscription.isMap || subscription.isPattern) {
                    try MarkRouting.around(source, compile)
                } else {
                    try compile(source)
                }
            start = { sink in chain.subscribe(sink) }
        }

        subscription.pinnedBytes = pinned
        // The reply goes out before any event of the subscription (replayed values included);
        // in a cluster, once NATS has the subscription that brings other nodes' values.
        if subscriptions.insert(subscription), let shared = context.shared {
            shared.awaitNewInterest()
            replyWhenWritten(ref: request.ref) { .subscribed(sid: sid, resumed: resumed) }
        } else {
            write(SessionReply(ref: request.ref, .subscribed(sid: sid, resumed: resumed)))
        }
        let disposable = start(EventSink(session: self, subscription: subscription, transport: transport))
        // The replay is out: the time stages go on in the loop's time.
        catchUp?.scheduler.goLive()
        if subscription.isFinished {
            disposable.dispose()
        } else {
            subscription.disposable = disposable
            context.occupancy.began(subscription)
        }
    }

    /// The chain on `entry` that subscriptions with `stages` share, and what this
    /// subscription is to be subscribed to in it (`SharedStageChain.entrance`); a new chain
    /// is registered once that is made, so a `sub` that fails leaves nothing behind. Nil when
    /// this subscription may not share one (`SharedStageChain.key(for:on:from:limits:)`).
    private func sharedChain(
        _ stages: [JSONValue], on entry: SubjectEntry, from: Position?, lookup: @escaping SubjectLookup
    ) throws(ProtocolError) -> (chain: SharedStageChain, entrance: Signal<Message>)? {
        guard let key = SharedStageChain.key(for: stages, on: entry, from: from, limits: settings.stageLimits) else {
            return nil
        }
        let compile = { (account: EvaluationAccount) throws(ProtocolError) -> Signal<Message> in
            try self.context.compileChain(
                stages, source: entry.subject, label: entry.label, account: account, lookup: lookup,
                under: self.settings)
        }
        if let existing = entry.sharedChains[key] {
            return (existing, try existing.entrance(for: evaluationAccount, compile: compile))
        }
        let made = SharedStageChain(key: key, entry: entry, stats: stats)
        let entrance = try made.entrance(for: evaluationAccount, compile: compile)
        entry.sharedChains[key] = made
        return (made, entrance)
    }

    private func unsubscribe(_ request: Request) throws(ProtocolError) {
        let sid = try request.requiredString(.sid)
        guard let subscription = subscriptions[sid] else {
            throw ProtocolError(.unknownSid, "no subscription '\(sid)' on this connection")
        }
        forget(subscription)
        write(SessionReply(ref: request.ref, .done))
    }

    // MARK: create / complete / error / delete

    private func create(_ request: Request) throws(ProtocolError) {
        let name = try writableSubjectName(request)
        let kindName = try request.requiredString(.kind)
        guard let kind = SubjectKind(rawValue: kindName) else {
            throw ProtocolError(
                .badRequest, "field 'kind' must be one of subject, replay, behavior, map; got '\(kindName)'")
        }
        if kind == .map { return try createMap(request, name: name) }
        var capacity: Int?
        if let given = try request.integer(.capacity) {
            guard kind == .replay else {
                throw ProtocolError(.badRequest, "field 'capacity' applies only to kind 'replay'")
            }
            guard given >= 1 && given <= settings.config.maxBufferValues else {
                throw ProtocolError(
                    .badRequest, "field 'capacity' must be between 1 and \(settings.config.maxBufferValues)")
            }
            capacity = given
        } else if kind == .replay {
            capacity = settings.config.defaultReplayCapacity
        }
        let initial = request.raw(.value)
        if initial != nil && kind != .behavior {
            throw ProtocolError(.badRequest, "field 'value' applies only to kind 'behavior'")
        }
        let policy = try slowConsumerPolicy(of: request)
        let retainMilliseconds = try retainMilliseconds(of: request, kind: kind)
        let durable = try request.bool(.durable) ?? false
        if durable {
            guard kind != .subject else {
                throw ProtocolError(.badRequest, "field 'durable' applies only to kinds 'replay', 'behavior' and 'map'")
            }
            guard subjects.keepsDurableSubjects else {
                throw ProtocolError(.badRequest, "durable subjects need 'data_dir' in the server's configuration")
            }
        }
        try finishCreate(
            request, name: name, policy: policy,
            matches: {
                $0.kind == kind && $0.capacity == capacity && $0.isDurable == durable
                    && $0.retainMilliseconds == retainMilliseconds
            }
        ) { () throws(ProtocolError) in
            if kind == .behavior { try subjects.retained.checkRoom(for: initial ?? .null, in: name) }
            if durable { try subjects.checkDurableWrites() }
            return subjects.create(
                name, kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, initial: initial,
                durable: durable)
        }
    }

    /// `create`'s end, for every kind: an existing subject that `matches` (the same shape) takes
    /// `policy` and is answered `done`, any other is `kind_mismatch` naming its shape; else,
    /// within `max_subjects`, `make` checks what it needs and makes the subject, which takes
    /// `policy` and is answered once made (for a durable one, once on disk where replies wait).
    func finishCreate(
        _ request: Request, name: String, policy: SlowConsumerPolicy?, matches: (SubjectEntry) -> Bool,
        make: () throws(ProtocolError) -> SubjectEntry
    ) throws(ProtocolError) {
        if let existing = subjects[name] {
            guard matches(existing) else {
                throw ProtocolError(.kindMismatch, "subject '\(name)' exists as \(existing.shape)")
            }
            if let policy { existing.label.slowConsumer = policy }
            write(SessionReply(ref: request.ref, .done))
            return
        }
        try context.checkSubjectLimit(under: settings)
        let entry = try make()
        entry.label.slowConsumer = policy
        if subjects.repliesWait(forChangeOf: entry) {
            replyWhenWritten(ref: request.ref)
        } else {
            write(SessionReply(ref: request.ref, .done))
        }
    }

    /// `create`'s `retain_s` (version 1.3), in milliseconds: a replay subject's values are kept
    /// no longer than that; nil when absent.
    private func retainMilliseconds(of request: Request, kind: SubjectKind) throws(ProtocolError) -> Int64? {
        guard let field = request.scanned.field(named: "retain_s") else { return nil }
        guard kind == .replay else {
            throw ProtocolError(.badRequest, "field 'retain_s' applies only to kind 'replay'")
        }
        guard let seconds = request.scanned.number(field), let milliseconds = RetainAge.milliseconds(seconds: seconds)
        else {
            throw ProtocolError(.badRequest, "field 'retain_s' must be \(RetainAge.requirement)")
        }
        return milliseconds
    }

    /// `create`'s `slow_consumer` (an extension): the subject's own policy; nil when absent.
    func slowConsumerPolicy(of request: Request) throws(ProtocolError) -> SlowConsumerPolicy? {
        guard let field = request.scanned.field(named: "slow_consumer") else { return nil }
        guard let text = request.scanned.string(field), let policy = SlowConsumerPolicy(rawValue: text) else {
            throw ProtocolError(
                .badRequest, "field 'slow_consumer' must be \(SlowConsumerPolicy.namesForErrors)")
        }
        return policy
    }

    /// `complete`, `error` (`error: true`) or `delete` (`delete: true`); on a loop that does
    /// not own the subjects, through the owner (`endThroughOwner`).
    private func end(_ request: Request, error: Bool = false, delete: Bool = false) throws(ProtocolError) {
        let name = try writableSubjectName(request)
        let ending: SubjectEnding =
            delete ? .delete : error ? .error(message: try request.requiredString(.message)) : .complete
        if let replicas = context.replicas { return endThroughOwner(name, ending, request.ref, replicas: replicas) }
        if try ending.apply(to: name, in: subjects) {
            replyWhenWritten(ref: request.ref)
        } else {
            write(SessionReply(ref: request.ref, .done))
        }
    }

    // MARK: list / stats / auth

    /// Only the subjects the token may subscribe or publish to.
    private func list(_ request: Request) throws(ProtocolError) {
        let prefix = try request.scanned.string(named: "prefix") ?? ""
        let grant = rights
        // The server's own subjects only when the prefix asks for them.
        let reserved = SystemSubjects.isReserved(prefix)
        let entries = subjects.list(prefix: prefix).filter {
            SystemSubjects.isReserved($0.name) == reserved && grant.mayList(SystemSubjects.rightsName(of: $0.name))
        }
        write(SessionReply(ref: request.ref, .subjects(entries)))
    }

    /// Answers `stats` once every loop's figures are in, in the reply's place (`replyWhenAnswered`).
    private func writeStats(_ request: Request) {
        replyWhenAnswered(ref: request.ref) { answer in
            context.owner.gatherStatsReport { answer(.stats($0)) }
        }
    }

    /// Takes the token's grant (compared in constant time, or verified as a JWT, see
    /// `AccessList`); a second `auth` moves the session to the new grant, ending the
    /// subscriptions its rights forbid (a JWT refreshed before it expires).
    private func authenticate(_ request: Request) throws(ProtocolError) {
        guard let token = try request.scanned.string(named: "token") else {
            throw ProtocolError(.badRequest, "missing field 'token'")
        }
        let found = try settings.access.authenticate(token, at: ProcessStatistics.wallClockSeconds()).get()
        context.logger.debug("authenticated", metadata: ["connection": "\(id)", "token": "\(found.source)"])
        move(to: found, because: "the connection authenticated again")
        write(SessionReply(ref: request.ref, .done))
    }

    /// `subject` for `create`, `complete`, `error` and `delete`: a valid name a client may
    /// write to (`SystemSubjects.checkWritable`).
    func writableSubjectName(_ request: Request) throws(ProtocolError) -> String {
        let name = try request.subjectName()
        try SystemSubjects.checkWritable(name)
        return name
    }
}
