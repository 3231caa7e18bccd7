import RunnelJSON
import RunnelProtocol

/// A `sub` on a loop that does not own the subjects (decision 0011) reads the subject's
/// replica here (`SubjectReplicas`). The first `sub` of a subject here asks the owner for it:
/// the request, and every request after it, waits (as for a cluster's catch-up), and runs
/// again with the replica once the owner has answered, so its reply keeps its place. A `pub`,
/// `create`, `complete`, `error`, `delete` or `list` goes to the owner (`ForwardedRequest`),
/// and its reply's place is kept until the answer comes.
extension Session {
    /// Sends `request`, a `pub` without a key, to the owner. Its reply (without a `ref`, only
    /// an error) is written in its place once the owner answers; meanwhile the value weighs as
    /// unsent output, so a publisher whose `pub`s the owner has not answered is held by the
    /// soft limit, as one that does not read its replies is.
    func publishThroughOwner(_ request: Request, replicas: SubjectReplicas) throws(ProtocolError) {
        let subject = try request.requiredString(.subject)
        let value = request.raw(.value) ?? .null
        forward(
            .publish(
                subject: subject, value: value, members: request.scanned.valueMembers, grant: rights,
                publisher: replicas.number(of: publisher)),
            ref: request.ref, to: replicas, weighing: value.count, quiet: request.ref == nil)
    }

    /// Sends `request` to the owner; its reply is written in its place once the owner answers,
    /// the place weighing `bytes` as unsent output until then. `quiet`: a success has no reply.
    func forward(
        _ request: ForwardedRequest, ref: RawJSON?, to replicas: SubjectReplicas, weighing bytes: Int = 0,
        quiet: Bool = false
    ) {
        let place = reserveReply(weighing: bytes)
        replicas.forward(request) { [weak self] outcome in
            guard let self else { return }
            if case .failed(let error) = outcome {
                stats.countRequestError(error.code)
            } else if quiet {
                return fill(place, with: nil)
            }
            fill(place, with: SessionReply(ref: ref, outcome))
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
        if let replica { return replica }
        guard let replicas = context.replicas, !SystemSubjects.isReserved(name) else {
            return try context.subjectForUse(name, under: settings)
        }
        if let held = replicas[name] {
            let isAhead = from.map { $0.epoch == held.epoch && $0.seq > held.lastSeq } ?? false
            guard cork != nil || isAhead else { return held }
            replicas.forward(.sync) { [weak self] _ in
                guard let self else { return }
                // Let go meanwhile: asked for again, as it is now.
                guard let held = replicas[name] else {
                    return subscribeReplicated(request, caughtUp: caughtUp, answer: nil)
                }
                subscribeReplicated(request, caughtUp: caughtUp, answer: .success(held))
            }
            return nil
        }
        replicas.open(name) { [weak self] answer in
            self?.subscribeReplicated(request, caughtUp: caughtUp, answer: answer)
        }
        return nil
    }

    /// The `sub` that waited for the owner runs again with its answer (nil: with no replica,
    /// which it asks for again), then what came after it.
    private func subscribeReplicated(
        _ request: SubscribeRequest, caughtUp: Bool, answer: Result<SubjectEntry, ProtocolError>?
    ) {
        guard !isClosing else { return }
        do throws(ProtocolError) {
            try subscribe(request, caughtUp: caughtUp, replica: answer?.get())
        } catch {
            writeReply(error: error, ref: request.ref)
        }
        resumeInput()
    }
}
