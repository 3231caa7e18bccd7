import Runnel
import RunnelBytes
import RunnelJSON
import RunnelProtocol

/// A `sub` on a loop that does not own the subjects (decision 0011) reads the subject's
/// replica here (`SubjectReplicas`). The first `sub` of a subject here asks the owner for it:
/// the request, and every request after it, waits (as for a cluster's catch-up), and runs
/// again with the replica once the owner has answered, so its reply keeps its place; so do
/// the subjects its stages name and a pattern's subjects (the server's own names, and patterns
/// of them, are the owner's too). A `pub`, `create`,
/// `complete`, `error`, `delete` or `list` goes to the owner (`ForwardedRequest`), and its
/// reply's place is kept until the answer comes.
extension Session {
    /// Sends `request`, a `pub` without a key, to the owner. Its reply (without a `ref`, only
    /// an error) is written in its place once the owner answers; meanwhile the value weighs as
    /// unsent output, so a publisher whose `pub`s the owner has not answered is held by the
    /// soft limit, as one that does not read its replies is. A quiet `pub` that follows one to
    /// the same subject in the same turn, nothing written between, joins it: they cross as
    /// one request, and their errors share one place (a burst of `pub`s costs one crossing).
    func publishThroughOwner(_ request: Request, replicas: Unmanaged<SubjectReplicas>) throws(ProtocolError) {
        let raw = request.raw(.value) ?? .null
        let members = request.scanned.valueMembers
        // The run is read where the session holds it, not retained (nothing here lets it go).
        if request.ref == nil, let field = request.scanned.subject,
            let run = publishRun.map({ Unmanaged.passUnretained($0) }),
            run._withUnsafeGuaranteedRef({
                join($0, subject: request.scanned.bytes(field), raw: raw, members: members, replicas: replicas)
            })
        {
            return
        }
        let subject = try request.requiredString(.subject)
        let grant = rights
        let ref = request.ref
        let place = reserveReply(weighing: raw.count)
        awaitingOwner += 1
        let replicas = replicas.takeUnretainedValue()
        let ticket = replicas.forward(
            ForwardedPublish.Value(raw: raw, members: members), to: subject, grant: grant,
            publisher: replicas.number(of: publisher)
        ) { [weak self] receipt, atOnce in
            guard let self else { return }
            awaitingOwner -= 1
            for failure in receipt.failures { stats.countRequestError(failure.error.code) }
            guard let ref else {
                return fill(
                    place, with: receipt.failures.map { SessionReply(ref: nil, .failed($0.error)) },
                    afterEventsBehindIt: atOnce)
            }
            fill(
                place,
                with: SessionReply(
                    ref: ref,
                    receipt.failures.first.map { .failed($0.error) } ?? .published(receivers: receipt.receivers)),
                afterEventsBehindIt: atOnce)
        }
        publishRun = request.scanned.subject.flatMap { field in
            guard ref == nil else { return nil }
            return ForwardedPublishRun(
                ticket: ticket, subject: ByteBuffer(copying: request.scanned.bytes(field)), grant: grant, place: place)
        }
    }

    /// Adds a quiet `pub` of `raw` to `subject` to `run`, the session's last forwarded `pub`s,
    /// when it may join them: the same subject and rights, nothing written behind their place,
    /// and their request not yet sent. The session's grant is compared, not retained: one grant
    /// serves every session of a token on every loop, and a retain a value from several threads
    /// makes its reference count a line they take in turns.
    private func join(
        _ run: ForwardedPublishRun, subject: UnsafeRawBufferPointer, raw: RawJSON, members: JSONMemberIndex,
        replicas: Unmanaged<SubjectReplicas>
    ) -> Bool {
        guard run.subject.hasSameBytes(as: subject), run.grant === self.grant, run.place.cork.isLast(run.place.slot),
            replicas._withUnsafeGuaranteedRef({ $0.extend(run.ticket, with: raw, members: members) })
        else { return false }
        assert(run.place.cork === cork, "a run's place outlived its cork")
        run.place.cork.weigh(run.place.slot, more: raw.count)
        return true
    }

    /// Sends `request` to the owner; its reply is written in its place once the owner answers,
    /// after the events that came with an answer given at once (a keyed `pub`'s, an ending's:
    /// on the owner's loop they go before the reply, except after a write, when the reply's
    /// place comes first), the place weighing `bytes` as unsent output until then. `quiet`: a
    /// success has no reply.
    func forward(
        _ request: ForwardedRequest, ref: RawJSON?, to replicas: SubjectReplicas, weighing bytes: Int = 0,
        quiet: Bool = false
    ) {
        let place = reserveReply(weighing: bytes)
        awaitingOwner += 1
        replicas.forward(request) { [weak self] outcome, atOnce in
            guard let self else { return }
            awaitingOwner -= 1
            if case .failed(let error) = outcome {
                stats.countRequestError(error.code)
            } else if quiet {
                return fill(place, with: nil, afterEventsBehindIt: atOnce)
            }
            fill(place, with: SessionReply(ref: ref, outcome), afterEventsBehindIt: atOnce)
        }
    }

    /// The subject a `sub` of `name` reads: the server's own (made when `auto_create` allows),
    /// or this loop's replica of it, or `replica`, the one the request waited for. Nil when the
    /// owner was asked: the caller holds the input until it answers.
    ///
    /// A replica held here is read at once, unless this session's replies are not all written
    /// (its `pub`s and changes may not have reached the replica yet) or `from` is beyond what
    /// the replica has received (a position another loop's subscriber was given): then the
    /// owner is asked for nothing (`ForwardedRequest.sync`), and its answer, which comes after
    /// every value it had sent here, runs the `sub` again with the replica as it is then.
    func subjectToRead(
        _ name: String, for request: SubscribeRequest, from: Position?, caughtUp: Bool, replica: SubjectEntry?
    ) throws(ProtocolError) -> SubjectEntry? {
        // The server's own subjects (`$sys.occupancy.S`) are the owner's too: it counts every loop.
        guard let replicas = context.replicas else { return try context.subjectForUse(name, under: settings) }
        let ahead = { (entry: SubjectEntry) in
            from.flatMap { $0.epoch == entry.epoch && $0.seq > entry.lastSeq ? $0 : nil }
        }
        if let replica {
            // In a cluster, a `from` beyond it may be beyond what the owner delivered too (another
            // node gave it): asked once, as a `sub` there waits (`SharedSubjects.whenDelivered`).
            guard !caughtUp, replicas.interest != nil, let from = ahead(replica) else { return replica }
            return sync(request, reading: name, in: replicas, catchingUp: from, caughtUp: true)
        }
        if let held = replicas[name] {
            let from = ahead(held)
            guard cork != nil || from != nil else { return held }
            return sync(request, reading: name, in: replicas, catchingUp: from, caughtUp: caughtUp || from != nil)
        }
        replicas.open(name) { [weak self] answer in
            self?.subscribeReplicated(request, caughtUp: caughtUp, answer: answer)
        }
        return nil
    }

    /// Asks the owner for nothing (`ForwardedRequest.sync`, catching up to `from` when given),
    /// then runs `request` again with the replica of `name` as it is then; nil, for the caller
    /// to hold the input meanwhile.
    private func sync(
        _ request: SubscribeRequest, reading name: String, in replicas: SubjectReplicas, catchingUp from: Position?,
        caughtUp: Bool
    ) -> SubjectEntry? {
        replicas.forward(.sync(catchingUp: from.map { (name, $0) })) { [weak self] _, _ in
            guard let self else { return }
            // Let go meanwhile: asked for again, as it is now.
            guard let held = replicas[name] else {
                return subscribeReplicated(request, caughtUp: caughtUp, answer: nil)
            }
            subscribeReplicated(request, caughtUp: caughtUp, answer: .success(held))
        }
        return nil
    }

    /// Subscribes as `request` asks, under the protocol's rules, whoever made it (a `sub`
    /// line, or a stream's query): its reply (`SessionReply.Outcome.subscribed`) goes out
    /// before any of its events. `caughtUp`: it waited once for this node to catch up with its
    /// `from` (`subscribeCaughtUp`). `replica`: the replica of its subject it waited for, on a
    /// loop that does not own the subjects (`subscribeReplicated`).
    ///
    /// There, a stage naming a subject whose replica is not here fails the chain's compiling
    /// (`stageReplica`): the `sub`, and the requests after it, wait until the owner has
    /// answered for every subject its stages name (asked for together, so they come in one
    /// turn), then it runs again, `refusals` holding the subjects the owner refused, which
    /// fail it as they would on the owner.
    func subscribe(
        _ request: SubscribeRequest, caughtUp: Bool = false, replica: SubjectEntry? = nil,
        refusals: [String: ProtocolError] = [:]
    ) throws(ProtocolError) {
        guard let replicas = context.replicas, !request.stages.isEmpty else {
            return try subscribeOnce(request, caughtUp: caughtUp, replica: replica)
        }
        replicaRefusals = refusals
        defer {
            replicaRefusals = [:]
            stageReplicaMissing = false
        }
        do {
            try subscribeOnce(request, caughtUp: caughtUp, replica: replica)
        } catch {
            guard stageReplicaMissing else { throw error }
            let named = subjectsNamed(by: request.stages, in: replicas, refused: refusals)
            let missing = named.filter { replicas[$0] == nil }
            guard !missing.isEmpty else { throw error }
            // What is here stays until the rest has come, so that the `sub` finds it all.
            var pinned = named.compactMap { replicas[$0] } + [replica ?? replicas[request.subject]].compactMap { $0 }
            for entry in pinned { replicas.pin(entry) }
            var left = missing.count
            var refused = refusals
            for name in missing {
                replicas.open(name) { [weak self] answer in
                    switch answer {
                    case .success(let entry):
                        replicas.pin(entry)
                        pinned.append(entry)
                    case .failure(let error): refused[name] = error
                    }
                    left -= 1
                    guard left == 0 else { return }
                    // Let go at the turn's end unless the `sub` takes them.
                    for entry in pinned { replicas.unpin(entry) }
                    self?.runAgain(request) { [refused] () throws(ProtocolError) in
                        try self?.subscribe(request, caughtUp: caughtUp, replica: replica, refusals: refused)
                    }
                }
            }
            holdInputWhileWaiting()
        }
    }

    /// Whether the subjects `pattern` matches are here: on a loop that does not own them, once
    /// the owner has sent a replica of each (`SubjectReplicas.watch`; the `sub` then runs
    /// again, and the requests after it wait meanwhile), a pattern of the server's own subjects
    /// (`$sys.occupancy.P`) too.
    func patternIsHere(_ pattern: SubjectPattern, for request: SubscribeRequest, caughtUp: Bool) -> Bool {
        guard let replicas = context.replicas, !replicas.isWatching(pattern) else { return true }
        replicas.watch(pattern) { [weak self] in
            self?.runAgain(request) { () throws(ProtocolError) in try self?.subscribe(request, caughtUp: caughtUp) }
        }
        return false
    }

    /// Whether every subject's replica is here, for a `sub` whose stages look subjects up as
    /// values arrive (`flattenMap`, `switchToLatest`): on a loop that does not own the subjects,
    /// once the owner sends them all (as for a pattern subscription to `>`), so the subject a
    /// value names is read from the moment the value is, as on the owner's loop.
    func everySubjectIsHere(for request: SubscribeRequest, caughtUp: Bool) -> Bool {
        patternIsHere(Self.everySubject, for: request, caughtUp: caughtUp)
    }

    /// Holds the watch of every subject (`everySubjectIsHere`) for the chain that will hold
    /// this; nil on the loop that owns the subjects.
    func holdEverySubject() -> ReplicaHold? { context.replicas?.holdWatch(of: Self.everySubject) }

    private static let everySubject = SubjectPattern(">")

    /// A pattern subscription's values: of the subjects here or, on a loop that does not own
    /// them, of their replicas.
    func patternSignal(_ pattern: SubjectPattern, admitting: (@Sendable (String) -> Bool)?) -> Signal<Message> {
        guard let replicas = context.replicas else { return subjects.patternSignal(pattern, admitting: admitting) }
        return replicas.patternSignal(pattern, admitting: admitting)
    }

    /// A subject a stage of `subscription` names, on a loop that does not own it: its replica
    /// here, read as `SubjectReplicas.reading` reads it. While the chain compiles (`late` nil),
    /// one not here is the owner's refusal when it gave one, else noted
    /// (`stageReplicaMissing`) and the compile fails, for `subscribe` to wait for it; at run
    /// time, a signal that reads it once it is here (`SubjectReplicas.later`).
    func stageReplica(
        _ name: String, for subscription: SessionSubscription, in replicas: SubjectReplicas,
        late: (@Sendable (ProtocolError) -> ProtocolError)?
    ) throws(ProtocolError) -> Signal<Message> {
        if let held = replicas[name] {
            noteReached(held, by: subscription)
            return replicas.reading(held)
        }
        if let refusal = replicaRefusals[name] { throw refusal }
        guard let late else {
            stageReplicaMissing = true
            throw ProtocolError(.unavailable, "subject '\(name)' is read through its owner's loop")
        }
        return replicas.later(name, failing: late) { [weak self, weak subscription] entry in
            guard let self, let subscription else { return }
            noteReached(entry, by: subscription)
        }
    }

    /// The subjects `stages` name while they compile, but those the owner refused: found by
    /// compiling them over nothing with a lookup that notes them.
    private func subjectsNamed(
        by stages: [JSONValue], in replicas: SubjectReplicas, refused: [String: ProtocolError]
    ) -> Set<String> {
        // The lookup is a `@Sendable` closure; it runs here, on this thread, as the compile does.
        let names = Locked(Set<String>())
        _ = try? context.compileChain(
            stages, source: .never, label: SubjectLabel(""), account: evaluationAccount,
            lookup: { name, _ in
                if refused[name] == nil {
                    names.withLock { _ = $0.insert(name) }
                }
                return .never
            }, under: settings)
        return names.withLock { $0 }
    }

    /// The `sub` that waited for the owner runs again with its answer (nil: with no replica,
    /// which it asks for again), then what came after it.
    private func subscribeReplicated(
        _ request: SubscribeRequest, caughtUp: Bool, answer: Result<SubjectEntry, ProtocolError>?
    ) {
        runAgain(request) { () throws(ProtocolError) in
            try subscribe(request, caughtUp: caughtUp, replica: answer?.get())
        }
    }
}

/// A session's last `pub`s sent to the subjects' owner (`Session.publishThroughOwner`): the
/// request's ticket, what they publish to (its field's exact bytes, matched without making a
/// string) and with which rights, and their replies' place. A class: a `pub` that joins the run
/// reads it where the session holds it, with no reference count for it or its references.
/// Thread rules: the session's loop.
final class ForwardedPublishRun {
    let ticket: UInt64
    let subject: ByteBuffer
    let grant: TokenGrant
    let place: ReplyPlace

    init(ticket: UInt64, subject: ByteBuffer, grant: TokenGrant, place: ReplyPlace) {
        self.ticket = ticket
        self.subject = subject
        self.grant = grant
        self.place = place
    }
}
