import Runnel
import RunnelBytes
import RunnelJSON
import RunnelProtocol

/// Retained subjects' values in a cluster: published into the subject's JetStream stream (the
/// reply waits for JetStream's answer), and delivered by every node from its ordered consumer
/// of that stream, with the stream's sequence numbers as their seqs, so each node holds the
/// same values in the same order and a position given by one resumes on any other. Loop
/// thread only, but for the worker's jobs.
extension ClusterSubjectStore {
    /// Publishes `value` into `entry`'s stream, as a change whose answer the reply waits for;
    /// it reaches subscribers, here as everywhere, when the node's consumer delivers it.
    func publishRetained(_ value: RawJSON, to entry: SubjectEntry) {
        if publishToStream(value.buffer, on: link.streamSubject(epoch: entry.epoch), of: entry) {
            entry.published &+= 1
        }
    }

    /// Publishes `payload` on `subject` of `entry`'s stream (only over the subject's value with
    /// seq `expectingLast`, when given), as a change whose answer the reply waits for: JetStream
    /// stored it and this node's consumer delivered it, so a `sub` after the reply finds it
    /// here. False, with the change answered `unavailable`, when too many wait for JetStream.
    @discardableResult
    func publishToStream(
        _ payload: ByteBuffer, on subject: String, of entry: SubjectEntry, expectingLast: UInt64? = nil
    ) -> Bool {
        let change = changes.begin()
        guard changes.unanswered <= Int(NATSJetStream.maxPending) else {
            // The values waiting for JetStream are held in memory: bounded.
            let waiting = "\(changes.unanswered - 1) changes of this node wait for the cluster's answer"
            answer(change, error: ProtocolError(.unavailable, "\(waiting); try again"))
            return false
        }
        let epoch = entry.epoch
        storing[change] = epoch
        let id = "\(link.instance)-\(change)"
        // A map's stream has no maximum age; a replay's is its `retain_s`.
        let window = NATSJetStream.resendWindow(maxAgeMilliseconds: entry.map == nil ? entry.retainMilliseconds : nil)
        let publish = { [link] in
            link.retainedPublisher.publish(
                payload, on: subject, id: id, expectingLast: expectingLast, resendWithin: window)
        }
        definitionSync.whenStreamExists(of: epoch, publish)
        return true
    }

    /// JetStream answered a publish of this node: the change its id names (a map's expiry
    /// has an id of its own, `ClusterSubjectStore+Maps`).
    func clusterPublished(id: String, answer outcome: NATSPublishAnswer) {
        guard id.hasPrefix(link.instance + "-") else { return }
        let number = id.dropFirst(link.instance.utf8.count + 1)
        if number.first == "x" { return expiryAnswered(UInt64(number.dropFirst()), outcome) }
        guard let change = UInt64(number) else { return }
        let epoch = storing.removeValue(forKey: change)
        switch outcome {
        case .stored(let seq):
            // (Only while its consumer runs: one that could not start delivers nothing.)
            if let epoch, streams.isConsuming(epoch), streams.delivered(epoch) < seq {
                _ = streams.wait(for: seq, of: epoch) { [unowned self] in answer(change, error: nil) }
                return
            }
            answer(change, error: nil)
        case .notLast:
            // A map's removal of a key another change reached first: it came before that change.
            answer(change, error: nil)
        case .failed(let problem):
            answer(change, error: ProtocolError(.unavailable, "the cluster did not store the value: \(problem)"))
        case .timedOut:
            preconditionFailure("ClusterRetainedPublisher sends again what JetStream did not answer")
        }
    }

    /// A message of a retained subject's stream: a map's change, or a value delivered with the
    /// stream's seq, once.
    func deliverRetained(_ message: NATSStreamMessage) {
        let rest = message.subject.dropFirst(link.streamPrefix.utf8.count)
        if let dot = rest.firstIndex(of: ".") {
            return deliverMapChange(message, epoch: String(rest[..<dot]), key: rest[rest.index(after: dot)...])
        }
        let epoch = String(rest)
        guard let entry = streams.entry(epoch), let publishBound, message.streamSeq > entry.lastSeq else { return }
        // A consumer that fell behind by more than the stream keeps skips what it lost: told.
        if entry.lastSeq > 0 && message.streamSeq > entry.lastSeq + 1 {
            missed(message.streamSeq - entry.lastSeq - 1, in: entry.name)
        }
        // Values before it this node never held (lost, or gone from the stream before it
        // started) were stored no later than it: a `since` before it cannot be replayed whole.
        if message.streamSeq > entry.lastSeq + 1 { entry.dropped.noteTime(message.time) }
        if let value = validated(message.payload[...]), !entry.isTerminated {
            publishBound.beginPublish()
            entry.deliver(
                Message(
                    label: entry.label, raw: value, members: JSONMemberIndex(), seq: message.streamSeq,
                    time: message.time))
            publishBound.endPublish()
        }
        consumed(message.streamSeq, of: entry)
    }

    /// This node's consumer delivered `entry`'s stream as far as `seq`: the replies waiting for
    /// it go out, and what waited for the stream's end or its catching up goes on.
    func consumed(_ seq: UInt64, of entry: SubjectEntry) {
        let reached = streams.consumed(seq, of: entry.epoch)
        for action in reached.waits { action() }
        if reached.caughtUp { checkCaughtUp() }
        if let error = reached.ending { local.terminate(entry, error: error) }
    }

    func endStream(of epoch: String, after last: UInt64, error: ProtocolError?) {
        guard let entry = streams.ends(epoch, after: last, error: error) else { return }
        local.terminate(entry, error: error)
    }

    /// Whether every retained subject's consumer has started and delivered what its stream
    /// held when it started (until then a `from` may not resume here that would elsewhere),
    /// and every live node has been heard (until then a `sub` reply would wait for that):
    /// `RunneldMain` opens the listeners once it is true (`whenCaughtUp`), or after
    /// `cluster_connect_timeout`.
    var hasCaughtUp: Bool { streams.hasCaughtUp && link.peers.peersKnown }

    /// Runs `action` once `hasCaughtUp` holds, at once if it does: readiness as an event,
    /// looked at again where its parts change (a consumer started, a stream's values delivered
    /// as far as it held, a subject gone) and, when time is all that is missing, when it has come.
    package func whenCaughtUp(_ action: @escaping () -> Void) {
        caughtUpWaiters.append(action)
        checkCaughtUp()
    }

    func checkCaughtUp() {
        guard !caughtUpWaiters.isEmpty else { return }
        guard hasCaughtUp else {
            if streams.hasCaughtUp {
                link.scheduler.after(link.peers.peersKnownAt) { [weak self] in self?.checkCaughtUp() }
            }
            return
        }
        let waiters = caughtUpWaiters
        caughtUpWaiters = []
        for waiter in waiters { waiter() }
    }

    /// Starts the node's consumer of `entry`'s stream (on the worker: it waits for JetStream).
    func startConsuming(_ entry: SubjectEntry) {
        let epoch = entry.epoch
        let isMap = entry.map != nil
        streams.starting(entry)
        let link = link
        link.worker.run { () -> (consumer: NATSSubscription, last: UInt64)? in
            let stream = link.streamName(epoch: epoch)
            do throws(NATSError) {
                let last = try link.jetStream.lastSequence(of: stream) ?? 0
                let consumer = try link.jetStream.consume(
                    stream, subject: link.streamSubjects(epoch: epoch, isMap: isMap), lastPerSubject: false)
                return (consumer, last)
            } catch {
                link.logger.error("cluster: cannot consume \(stream): \(error)")
                return nil
            }
        } then: { [self] started in
            defer { checkCaughtUp() }
            guard let (consumer, last) = started else { return streams.failedToStart() }
            // Deleted meanwhile: the consumer goes too.
            if !streams.started(epoch, consumer, last: last) { link.worker.run { consumer.unsubscribe() } }
        }
    }

    /// Stops it (the subject is gone here).
    func stopConsuming(_ entry: SubjectEntry) {
        let (consumer, waits) = streams.stop(entry.epoch)
        // Its replies and subscriptions wait no more: the subject is gone here.
        for action in waits { action() }
        checkCaughtUp()
        guard let consumer else { return }
        link.worker.run { consumer.unsubscribe() }
    }

    /// Runs `then` once this node has delivered `entry`'s stream as far as `position` (in its
    /// epoch, beyond what this node has delivered: its consumer lags behind the node that gave
    /// it, or has yet to start), or after `within` at the latest, or as soon as JetStream says
    /// the stream does not reach it (a position made up, or of values lost); false, and nothing
    /// done, when this node is not behind it.
    package func whenDelivered(
        upTo position: Position, of entry: SubjectEntry, within: Duration, then: @escaping () -> Void
    ) -> Bool {
        let epoch = entry.epoch
        // Its consumer runs, or is starting (a subject made a moment ago).
        guard position.epoch == epoch, position.seq > entry.lastSeq, streams.entry(epoch) === entry else {
            return false
        }
        let id = streams.wait(for: position.seq, of: epoch, then)
        let scheduler = link.scheduler
        scheduler.after(scheduler.now.advanced(by: within)) { [weak self] in self?.streams.cancelWait(id)?() }
        let stream = link.streamName(epoch: epoch)
        link.worker.run { [link] in
            try? link.jetStream.lastSequence(of: stream)
        } then: { [weak self] last in
            // Beyond what the stream holds, or not known: nothing to wait for.
            if last.map({ position.seq > $0 }) ?? true { self?.streams.cancelWait(id)?() }
        }
        return true
    }
}
