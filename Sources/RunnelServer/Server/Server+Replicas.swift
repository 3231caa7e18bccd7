import RunnelJSON
import RunnelProtocol

/// The owner's side of replicas (decision 0011): what its `ReplicaSource` asks of it for other
/// loops' sessions, carried out by the rules its own sessions' requests follow. Loop thread
/// only.
extension Server: ReplicaOwner {
    func subjectToReplicate(_ name: String) throws(ProtocolError) -> SubjectEntry {
        try sessionContext.subjectForUse(name, under: sessionSettings)
    }

    func replicaCountsChanged(_ name: String) { occupancy.replicaCountsChanged(name) }

    func replicaPatternChanged(_ pattern: SubjectPattern) { occupancy.patternCountsChanged(pattern) }

    func occupancyPattern(_ pattern: String, isWatched: Bool) {
        guard let occupied = SystemSubjects.occupied(by: pattern) else { return }
        if isWatched {
            occupancy.patternBegan(SubjectPattern(occupied))
        } else {
            occupancy.patternEnded(SubjectPattern(occupied))
        }
    }

    /// Carries out `request` and hands `then` what its reply says: for a `pub` or a change
    /// whose reply waits for the write (`Publishing.Receipt`, `SubjectChange.apply`), once
    /// written.
    func answer(
        _ request: ForwardedRequest, publishers: RemotePublishers, then: @escaping (SessionReply.Outcome) -> Void
    ) {
        do throws(ProtocolError) {
            switch request {
            case .publishKeyed(let subject, let key, let value, let members, let grant, let publisher):
                let (receivers, waits) = try Publishing.change(
                    key, to: value, members: members, of: try mapTarget(named: subject, for: grant), in: subjects,
                    counting: stats, bounding: publishEvaluationBound, by: publishers.gate(publisher))
                guard waits else { return then(.published(receivers: receivers)) }
                answerWhenWritten(then) { .published(receivers: receivers) }
            case .change(let change):
                guard try change.apply(in: sessionContext, under: sessionSettings) else { return then(.done) }
                answerWhenWritten(then) { .done }
            case .list(let prefix, let grant):
                then(.subjects(SubjectListing.list(of: subjects, prefix: prefix, for: grant)))
            case .sync(let catchingUp):
                let answer: () -> Void = { [weak self] in self?.answerWhenWritten(then) { .done } }
                if let (name, from) = catchingUp, let shared, let entry = subjects[name],
                    shared.whenDelivered(upTo: from, of: entry, within: Session.catchUpWait, then: answer)
                {
                    return
                }
                answer()
            }
        } catch {
            then(.failed(error))
        }
    }

    /// Publishes another loop's `pub`s, each as a `pub` here would be, through the stand-in for
    /// their publisher, whom a subscriber lagging behind a value pauses there. One whose answer
    /// waits for the write (`Publishing.Receipt.afterWrite`) fails with the write.
    func publish(
        _ forwarded: ForwardedPublish, publishers: RemotePublishers,
        then: @escaping (ForwardedPublish.Receipt) -> Void
    ) {
        var receipt = ForwardedPublish.Receipt()
        let target: (entry: SubjectEntry, made: Bool)
        do throws(ProtocolError) {
            target = try publishTarget(named: forwarded.subject, for: forwarded.grant)
            if target.entry.map != nil { throw Publishing.keyNeeded(target.entry) }
        } catch {
            receipt.failures = forwarded.values.indices.map { ($0, error) }
            return then(receipt)
        }
        let gate = publishers.gate(forwarded.publisher)
        /// Those whose answer waits for the write.
        var waiting: [Int] = []
        // The receipt's count is the last value's (a `pub` with a `ref` comes alone).
        let last = forwarded.values.count - 1
        // Each value is read where it lies: copied out, its bytes were retained and released
        // once more, a count whose line the loop that made them last wrote.
        forwarded.values.withUnsafeBufferPointer { values in
            for index in values.indices {
                let value = values.baseAddress.unsafelyUnwrapped + index
                do throws(ProtocolError) {
                    switch try Publishing.publish(
                        value.pointee.raw, members: value.pointee.members, to: target.entry,
                        made: target.made && index == 0, in: subjects, counting: stats,
                        bounding: publishEvaluationBound, by: gate, countsReceivers: index == last)
                    {
                    case .now(let receivers): receipt.receivers = receivers
                    case .afterWrite: waiting.append(index)
                    }
                } catch {
                    receipt.failures.append((index, error))
                }
            }
        }
        guard !waiting.isEmpty else { return then(receipt) }
        subjects.whenWritten { [entry = target.entry] error in
            if let error {
                receipt.failures = (receipt.failures + waiting.map { ($0, error) }).sorted { $0.index < $1.index }
            } else if waiting.last == forwarded.values.count - 1 {
                receipt.receivers = entry.subscriberCount
            }
            then(receipt)
        }
    }

    /// Hands `then` what `outcome` makes once the changes made so far are written, or the
    /// error that kept them off the disk (`Session.replyWhenWritten`'s rule, for a reply on
    /// another loop).
    private func answerWhenWritten(
        _ then: @escaping (SessionReply.Outcome) -> Void, _ outcome: @escaping () -> SessionReply.Outcome
    ) {
        subjects.whenWritten { error in then(error.map { .failed($0) } ?? outcome()) }
    }

    /// Values of `subject` did not reach this loop (its replica's owner had too many waiting
    /// for it: `ReaderLink`): each subscription here that reads the subject is told `count`
    /// were missed, with `dropped` before its next value, under `drop` and `conflate`; under
    /// `disconnect` its session is cut. Walks every session's subscriptions, which happens
    /// only when a loop fell that far behind.
    func noteMissed(_ count: UInt64, of subject: String) {
        let policy = replicas?[subject]?.label.slowConsumer ?? config.slowConsumer
        for session in sessions.values {
            // As an event its own output had no room for: a conflating subscription is told
            // the gap, under `disconnect` the session is cut.
            for subscription in session.subscriptions.all where subscription.reads(subject) && !session.isClosing {
                session.actOnSlowConsumer(subscription.conflates ? .conflate : policy, subscription, missed: count)
            }
        }
    }
}
