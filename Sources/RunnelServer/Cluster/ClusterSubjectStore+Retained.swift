import Runnel
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
        let change = changes.begin()
        guard changes.unanswered <= Int(NATSJetStream.maxPending) else {
            // The values waiting for JetStream are held in memory: bounded.
            let waiting = "\(changes.unanswered - 1) changes of this node wait for the cluster's answer"
            return answer(change, error: ProtocolError(.unavailable, "\(waiting); try again"))
        }
        entry.published &+= 1
        let epoch = entry.epoch
        if awaitingStreams[epoch] != nil {
            // Made here a moment ago: its stream is still being made.
            awaitingStreams[epoch]!.append { [self] in send(value, epoch: epoch, change: change) }
        } else {
            send(value, epoch: epoch, change: change)
        }
    }

    private func send(_ value: RawJSON, epoch: String, change: UInt64) {
        link.retainedPublisher.publish(value, on: link.streamSubject(epoch: epoch), id: "\(link.instance)-\(change)")
    }

    /// JetStream answered a publish of this node: the change its id names.
    func clusterPublished(id: String, error: String?) {
        guard id.hasPrefix(link.instance + "-"), let change = UInt64(id.dropFirst(link.instance.utf8.count + 1))
        else { return }
        answer(change, error: error.map { ProtocolError(.unavailable, "the cluster did not store the value: \($0)") })
    }

    /// A value of a retained subject's stream: delivered with the stream's seq, once.
    func deliverRetained(_ message: NATSStreamMessage) {
        let epoch = String(message.subject.dropFirst(link.streamPrefix.utf8.count))
        guard let entry = retainedByEpoch[epoch], let publishBound, message.streamSeq > entry.lastSeq else { return }
        // A consumer that fell behind by more than the stream keeps skips what it lost: told.
        if entry.lastSeq > 0 && message.streamSeq > entry.lastSeq + 1 {
            missed(message.streamSeq - entry.lastSeq - 1, in: entry.name)
        }
        // Values before it this node never held (lost, or gone from the stream before it
        // started) were stored no later than it: a `since` before it cannot be replayed whole.
        if message.streamSeq > entry.lastSeq + 1 { entry.dropped.noteTime(message.time) }
        if let value = validated(message.payload), !entry.isTerminated {
            publishBound.beginPublish()
            entry.deliver(
                Message(
                    label: entry.label, raw: value, members: JSONMemberIndex(), seq: message.streamSeq,
                    time: message.time))
            publishBound.endPublish()
        }
        if let target = catchingUp[epoch], message.streamSeq >= target {
            catchingUp[epoch] = nil
            checkCaughtUp()
        }
        if let ending = endings[epoch], message.streamSeq >= ending.last {
            endings[epoch] = nil
            local.terminate(entry, error: ending.error)
        }
    }

    /// Whether every retained subject's consumer has started and delivered what its stream
    /// held when it started (until then a `from` may not resume here that would elsewhere),
    /// and every live node has been heard (until then a `sub` reply would wait for that):
    /// `RunneldMain` opens the listeners once it is true (`whenCaughtUp`), or after
    /// `cluster_connect_timeout`.
    var hasCaughtUp: Bool { startingConsumers == 0 && catchingUp.isEmpty && link.peers.peersKnown }

    /// Runs `action` once `hasCaughtUp` holds, at once if it does: readiness as an event,
    /// looked at again where its parts change (a consumer started, a stream's values delivered
    /// as far as it held, a subject gone) and, when time is all that is missing, when it has come.
    func whenCaughtUp(_ action: @escaping () -> Void) {
        caughtUpWaiters.append(action)
        checkCaughtUp()
    }

    func checkCaughtUp() {
        guard !caughtUpWaiters.isEmpty else { return }
        guard hasCaughtUp else {
            if startingConsumers == 0 && catchingUp.isEmpty {
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
        retainedByEpoch[epoch] = entry
        startingConsumers += 1
        let link = link
        link.worker.run { () -> (consumer: NATSSubscription, last: UInt64)? in
            let stream = link.streamName(epoch: epoch)
            do throws(NATSError) {
                let last = try link.jetStream.lastSequence(of: stream) ?? 0
                let consumer = try link.jetStream.consume(
                    stream, subject: link.streamSubject(epoch: epoch), lastPerSubject: false)
                return (consumer, last)
            } catch {
                link.logger.error("cluster: cannot consume \(stream): \(error)")
                return nil
            }
        } then: { [self] started in
            startingConsumers -= 1
            defer { checkCaughtUp() }
            guard let (consumer, last) = started else { return }
            // Deleted meanwhile: the consumer goes too.
            guard let entry = retainedByEpoch[epoch] else { return link.worker.run { consumer.unsubscribe() } }
            consumers[epoch] = consumer
            if last > entry.lastSeq { catchingUp[epoch] = last }
        }
    }

    /// Stops it (the subject is gone here).
    func stopConsuming(_ entry: SubjectEntry) {
        retainedByEpoch[entry.epoch] = nil
        catchingUp[entry.epoch] = nil
        endings[entry.epoch] = nil
        checkCaughtUp()
        guard let consumer = consumers.removeValue(forKey: entry.epoch) else { return }
        link.worker.run { consumer.unsubscribe() }
    }
}
