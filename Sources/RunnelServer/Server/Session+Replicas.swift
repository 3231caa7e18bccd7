import RunnelJSON
import RunnelProtocol

/// A `sub` on a loop that does not own the subjects (decision 0011) reads the subject's
/// replica here (`SubjectReplicas`). The first `sub` of a subject here asks the owner for it:
/// the request, and every request after it, waits (as for a cluster's catch-up), and runs
/// again with the replica once the owner has answered, so its reply keeps its place. A `pub`,
/// `complete`, `error` or `delete` goes to the owner, and its reply's place is kept until the
/// answer comes.
extension Session {
    /// Sends `request`, a `pub` without a key, to the owner. Its reply (without a `ref`, only
    /// an error) is written in its place once the owner answers; meanwhile the value weighs as
    /// unsent output, so a publisher whose `pub`s the owner has not answered is held by the
    /// soft limit, as one that does not read its replies is.
    func publishThroughOwner(_ request: Request, replicas: SubjectReplicas) throws(ProtocolError) {
        let subject = try request.requiredString(.subject)
        let ref = request.ref
        let value = request.raw(.value) ?? .null
        let place = reserveReply(weighing: value.count)
        replicas.publish(value, members: request.scanned.valueMembers, to: subject, grant: rights) {
            [weak self] answer in
            self?.fill(place, with: answer, ref: ref) { ref, receivers in
                ref.map { SessionReply(ref: $0, .published(receivers: receivers)) }
            }
        }
    }

    /// Sends `complete`, `error` or `delete` of `subject` (`ending`) to the owner; its reply is
    /// written in its place once the owner answers.
    func endThroughOwner(_ subject: String, _ ending: SubjectEnding, _ ref: RawJSON?, replicas: SubjectReplicas) {
        let place = reserveReply()
        replicas.end(subject, ending) { [weak self] answer in
            self?.fill(place, with: answer, ref: ref) { ref, _ in SessionReply(ref: ref, .done) }
        }
    }

    /// Fills `place` with the reply to a request the owner answered: `success`'s (nothing
    /// when it makes none), or the error's, counted.
    private func fill(
        _ place: ReplyPlace, with answer: Result<Int, ProtocolError>, ref: RawJSON?,
        success: (RawJSON?, Int) -> SessionReply?
    ) {
        switch answer {
        case .success(let count):
            fill(place, with: success(ref, count))
        case .failure(let error):
            stats.countRequestError(error.code)
            fill(place, with: SessionReply(ref: ref, .failed(error)))
        }
    }

    /// The subject a `sub` of `name` reads: the server's own (made when `auto_create` allows),
    /// or this loop's replica of it, or `replica`, the one the request waited for. Nil when the
    /// owner was asked for it: the caller holds the input until it answers.
    func subjectToRead(_ name: String, for request: SubscribeRequest, caughtUp: Bool, replica: SubjectEntry?)
        throws(ProtocolError) -> SubjectEntry?
    {
        if let replica { return replica }
        guard let replicas = context.replicas, !SystemSubjects.isReserved(name) else {
            return try context.subjectForUse(name, under: settings)
        }
        if let held = replicas[name] { return held }
        replicas.open(name) { [weak self] answer in
            self?.subscribeReplicated(request, caughtUp: caughtUp, answer: answer)
        }
        return nil
    }

    /// The `sub` that waited for the owner runs again with its answer, then what came after it.
    private func subscribeReplicated(
        _ request: SubscribeRequest, caughtUp: Bool, answer: Result<SubjectEntry, ProtocolError>
    ) {
        guard !isClosing else { return }
        do throws(ProtocolError) {
            try subscribe(request, caughtUp: caughtUp, replica: answer.get())
        } catch {
            writeReply(error: error, ref: request.ref)
        }
        resumeInput()
    }
}
