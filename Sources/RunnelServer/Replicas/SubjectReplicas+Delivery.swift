import RunnelProtocol

/// How a replica's values reach this loop's subscribers: in their publisher's stand-in, bounded
/// per value by `max_publish_eval_ms`, a map's as the changes its owner made. Thread rules: as
/// `SubjectReplicas`'s.
extension SubjectReplicas {
    /// Delivers the `values` at `places` to `entry`'s subscribers here, each inside its
    /// publisher's stand-in: a subscriber it puts over the soft limit pauses the publisher
    /// where it is.
    func deliver(_ values: [ReplicatedValue], at places: [Int], to entry: SubjectEntry) {
        var gate: (number: UInt64, PublisherGate)?
        // By index: each value is read where it is, not copied out and destroyed.
        for index in places {
            let publisher = values[index].publisher
            guard publisher != 0 else {
                deliver(values[index], to: entry)
                continue
            }
            if gate?.number != publisher { gate = (publisher, publishers.gate(publisher)) }
            gate!.1.publishing { deliver(values[index], to: entry) }
        }
    }

    /// Delivers `value` to `entry`'s subscribers here, their evaluations bounded by
    /// `max_publish_eval_ms` as the owner bounds its own subscribers' (`PublishEvaluationBound`).
    private func deliver(_ value: ReplicatedValue, to entry: SubjectEntry) {
        publishBound.beginPublish()
        if entry.map != nil {
            change(entry, as: value)
        } else {
            entry.deliver(value.message(in: entry.label))
        }
        publishBound.endPublish()
    }

    /// A map's change, as its owner made it: a key written, or removed (`value.mark`).
    private func change(_ entry: SubjectEntry, as value: ReplicatedValue) {
        guard let key = value.key else { return assertionFailure("a map's change without a key") }
        if let mark = value.mark {
            if !entry.remove(key, mark, seq: { value.seq }, time: value.time) {
                entry.recordRemoval(of: key, mark, seq: value.seq, time: value.time)
            }
        } else {
            entry.write(value.raw, members: value.members, key: key, seq: value.seq, time: value.time)
        }
    }
}
