import RunnelExpression
import RunnelUV

/// What a subject's owner has made of its values this turn for the loops holding replicas of
/// it (`SubjectEntry.replicated`), kept by its entry. Thread rules: the owner's loop.
struct SubjectReplication {
    /// The value made last, with the payload it was made from (held, so that the payload's
    /// identity, which tells the next feed of the same fan-out that the value is made, is
    /// never another payload's meanwhile).
    fileprivate var latest: (source: Payload, seq: UInt64, publisher: UInt64, value: ReplicatedValueRef)?
    /// This turn's values, while they take more.
    fileprivate var values: ReplicatedValues?
    /// How many values the last turn made: the room the next turn's values start with.
    fileprivate var lastTurnCount = 0
}

extension SubjectEntry: TurnEndWork {
    /// `message`, published by the publisher numbered `publisher`, as the loops holding
    /// replicas of the subject are handed it: made by the first of its feeds to send it, in
    /// this turn's values of its maker's (`PublisherGate.maker`), and found there by the
    /// others. The owner's loop, `loop` (read only when the turn's values start).
    @inline(__always)
    func replicated(
        _ message: Message, publisher: UInt64, maker: ReplicaReader?, loop: @autoclosure () -> LoopScheduler
    ) -> ReplicatedValueRef {
        let seq = message.seq ?? 0
        if let latest = replication.latest, latest.source === message.source, latest.publisher == publisher,
            latest.seq == seq
        {
            return latest.value
        }
        let values: ReplicatedValues
        if let open = replication.values, !open.isSealed, open.maker === maker {
            values = open
        } else {
            if replication.values == nil { loop().atTurnEnd(self) }
            values = ReplicatedValues(capacity: replication.lastTurnCount, maker: maker)
            replication.values = values
        }
        let made = ReplicatedValue(message, publisher: publisher)
        let weight = made.weight
        let value = ReplicatedValueRef(values: values, index: values.append(made), weight: weight)
        // One feed looks for it nowhere else. Whatever `latest` names, `values` holds.
        if replicaSubscribers.feeds > 1 {
            replication.latest = (message.source, seq, publisher, value)
        } else if replication.latest != nil {
            replication.latest = nil
        }
        return value
    }

    /// The turn ended: its values are let go here (the updates naming them hold them).
    package func turnEnded() {
        replication = SubjectReplication(lastTurnCount: replication.values?.values.count ?? 0)
    }
}
