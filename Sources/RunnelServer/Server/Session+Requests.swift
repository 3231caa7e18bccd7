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
            let name = try writableSubjectName(request)
            try change(.create(SubjectCreation(parsing: request, name: name, under: settings.config)), ref: request.ref)
        case .complete:
            try rights.checkManage("complete subjects")
            try end(request, error: false)
        case .error:
            try rights.checkManage("error subjects")
            try end(request, error: true)
        case .delete:
            try rights.checkManage("delete subjects")
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
        if let replicas = unretainedReplicas { return try publishThroughOwner(request, replicas: replicas) }
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
        switch try Publishing.publish(
            request.raw(.value) ?? .null, members: request.scanned.valueMembers, to: entry, made: made, in: subjects,
            counting: stats, bounding: publishBound, by: publisher)
        {
        case .now(let receivers): write(SessionReply(ref: ref, .published(receivers: receivers)))
        case .afterWrite: replyWhenWritten(ref: ref) { .published(receivers: entry.subscriberCount) }
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

    /// `subscribe`'s rules, run once (`Session+Replicas` runs it again on a loop that does not
    /// own the subjects, once the owner has answered for what its stages name).
    func subscribeOnce(
        _ request: SubscribeRequest, caughtUp: Bool, replica: SubjectEntry?
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
        let looksUpAtRunTime = StageCompiler.looksUpAtRunTime(stages)
        guard !looksUpAtRunTime || everySubjectIsHere(for: request, caughtUp: caughtUp) else {
            return holdInputWhileWaiting()
        }
        let entry: SubjectEntry?
        if pattern.isWildcard {
            entry = nil
            guard patternIsHere(pattern, for: request, caughtUp: caughtUp) else { return holdInputWhileWaiting() }
        } else {
            // Nil: it waits for the owner (`subjectToRead`).
            let found = try subjectToRead(target, for: request, from: from, caughtUp: caughtUp, replica: replica)
            guard let found else { return holdInputWhileWaiting() }
            entry = found
        }
        try checkTimeBounds(request, on: entry, from: from)
        // A cluster keeps a retained subject's values, and the positions `from` names.
        // (Not the server's own subjects, which it keeps alone: `SystemSubjects`.)
        if from != nil || entry?.retainsValues == true && !SystemSubjects.isReserved(target) {
            try subjects.checkShared()
            try context.replicas?.checkShared()
        }
        // A position another node gave, beyond what this node delivered yet: the request (and
        // those after it) waits until this node has, then runs again (`subscribeCaughtUp`).
        if let from, let entry, !caughtUp, let shared = context.shared,
            shared.whenDelivered(
                upTo: from, of: entry, within: Self.catchUpWait,
                then: { [weak self] in self?.subscribeCaughtUp(request) })
        {
            return holdInputWhileWaiting()
        }
        var source: Signal<Message> = entry?.subject ?? patternSignal(pattern, admitting: admitted)
        // What a subject keeps for `retain_s` is not replayed past it. The server's clock, read
        // once: `since` and `until` are measured from the same instant.
        let now = subjects.retained.now
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
        let lookup = stageLookup(for: subscription, holding: looksUpAtRunTime ? holdEverySubject() : nil)
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
        // in a cluster, once NATS has the subscription that brings other nodes' values (told
        // by the owner of the subjects on a loop that does not own them).
        let madeInterest = subscriptions.insert(subscription)
        if madeInterest, let shared = context.shared {
            shared.awaitNewInterest()
            replyWhenWritten(ref: request.ref) { .subscribed(sid: sid, resumed: resumed) }
        } else if madeInterest, let replicas = context.replicas {
            replyWhenAnswered(ref: request.ref) { answer in
                replicas.forward(.sync()) { outcome, _ in
                    guard case .failed = outcome else { return answer(.subscribed(sid: sid, resumed: resumed)) }
                    answer(outcome)
                }
            }
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

    /// Makes `change` (`create` or an ending) here, or on a loop that does not own the
    /// subjects, has the owner make it; answered once made (once written, where replies wait
    /// for that).
    private func change(_ change: SubjectChange, ref: RawJSON?) throws(ProtocolError) {
        if let replicas = context.replicas { return forward(.change(change), ref: ref, to: replicas) }
        if try change.apply(in: context, under: settings) {
            replyWhenWritten(ref: ref)
        } else {
            write(SessionReply(ref: ref, .done))
        }
    }

    /// `complete`, `error` (`error: true`) or `delete` (`delete: true`).
    private func end(_ request: Request, error: Bool = false, delete: Bool = false) throws(ProtocolError) {
        let name = try writableSubjectName(request)
        let ending: SubjectEnding =
            delete ? .delete : error ? .error(message: try request.requiredString(.message)) : .complete
        try change(.end(subject: name, ending), ref: request.ref)
    }

    // MARK: list / stats / auth

    /// Only the subjects the token may subscribe or publish to (`Server.listSubjects`), in the
    /// reply's place, the requests after it held until it is in (`replyWhenAnswered`).
    private func list(_ request: Request) throws(ProtocolError) {
        let prefix = try request.scanned.string(named: "prefix") ?? ""
        let grant = rights
        replyWhenAnswered(ref: request.ref, holdingInput: true) { answer in
            context.owner.listSubjects(prefix: prefix, for: grant) { answer(.subjects($0)) }
        }
    }

    /// Answers `stats` once every loop's figures are in, in the reply's place, the requests
    /// after it held until then (`replyWhenAnswered`).
    private func writeStats(_ request: Request) {
        replyWhenAnswered(ref: request.ref, holdingInput: true) { answer in
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
