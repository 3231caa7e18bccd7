import RunnelExpression
import RunnelUV

/// What a subject's owner has made of its values this turn for the loops holding replicas of
/// it (`SubjectEntry.replicated`), kept by its entry. Thread rules: the owner's loop.
struct SubjectReplication {
    /// The value made last, with what tells the next feed of the same fan-out that it is made:
    /// its payload's identity, its seq, and its publisher's gate (`PublisherPauses.currentGate`).
    /// Plain values, compared with no reference counted per feed.
    fileprivate var latest:
        (source: ObjectIdentifier, seq: UInt64, gate: UnsafeMutableRawPointer?, value: ReplicatedValueRef)?
    /// The payload `latest` names, held so that its identity is never another payload's
    /// meanwhile.
    fileprivate var heldSource: Payload?
    /// This turn's values, while they take more.
    fileprivate var values: ReplicatedValues?
    /// How many values the last turn made: the room the next turn's values start with.
    fileprivate var lastTurnCount = 0
}

extension SubjectEntry: TurnEndWork {
    /// `message`, published by whoever `pauses` names now, as the loops holding replicas of the
    /// subject are handed it: made by the first of its feeds to send it, in this turn's values
    /// of its maker's (`PublisherGate.maker`), and found there by the others, which look up
    /// neither its publisher nor its maker (`publishers.origin`). The owner's loop, `loop`
    /// (which outlives its entries).
    /// Nothing on this path takes a reference count it need not: each is a locked
    /// instruction, which on a loop among others costs far more than its count
    /// (bench/README.md, "Reference counts a crossing takes").
    @inline(__always)
    func replicated(
        _ message: borrowing Message, pauses: PublisherPauses, publishers: PublisherRegistry,
        loop: Unmanaged<LoopScheduler>
    ) -> ReplicatedValueRef {
        let seq = message.seq ?? 0
        let source = ObjectIdentifier(message.source)
        let gate = pauses.currentGate?.toOpaque()
        if let latest = replication.latest, latest.source == source, latest.seq == seq, latest.gate == gate {
            return latest.value
        }
        return replicate(
            message, seq: seq, source: source, gate: gate, origin: publishers.origin(of: pauses), loop: loop)
    }

    /// Makes `message`'s value for the feeds (`replicated`): once a value, out of the feeds'
    /// path.
    @inline(never)
    private func replicate(
        _ message: borrowing Message, seq: UInt64, source: ObjectIdentifier, gate: UnsafeMutableRawPointer?,
        origin: (number: UInt64, maker: Unmanaged<ReplicaReader>?), loop: Unmanaged<LoopScheduler>
    ) -> ReplicatedValueRef {
        if replication.values?.isOpen(to: origin.maker) != true {
            if replication.values == nil { loop.takeUnretainedValue().atTurnEnd(self) }
            replication.values = ReplicatedValues(
                capacity: replication.lastTurnCount, maker: origin.maker?.takeUnretainedValue())
        }
        // Held by the entry until the turn ends: not counted again here.
        let values = Unmanaged.passUnretained(replication.values.unsafelyUnwrapped)
        let made = ReplicatedValue(message, publisher: origin.number)
        let weight = made.weight
        let value = ReplicatedValueRef(
            values, index: values._withUnsafeGuaranteedRef { $0.append(made) }, weight: weight)
        // One feed looks for it nowhere else. Whatever `latest` names, `values` holds.
        if replicaSubscribers.feeds > 1 {
            replication.latest = (source, seq, gate, value)
            replication.heldSource = message.source
        } else if replication.latest != nil {
            replication.latest = nil
            replication.heldSource = nil
        }
        return value
    }

    /// The turn ended: its values are let go here (the updates naming them hold them).
    package func turnEnded() {
        replication = SubjectReplication(lastTurnCount: replication.values?.values.count ?? 0)
    }
}
