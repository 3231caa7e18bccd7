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
        // Each value is read where it lies, field by field: read from the array (even in place),
        // it was copied out and destroyed, two reference counts and a 96-byte copy a value.
        values.withUnsafeBufferPointer { values in
            guard let first = values.baseAddress else { return }
            for index in places {
                let value = first + index
                let publisher = value.pointee.publisher
                guard publisher != 0 else {
                    deliver(value, to: entry)
                    continue
                }
                if gate?.number != publisher { gate = (publisher, publishers.gate(publisher)) }
                gate!.1.publishing { deliver(value, to: entry) }
            }
        }
    }

    /// Delivers the value at `value` to `entry`'s subscribers here, their evaluations bounded
    /// by `max_publish_eval_ms` as the owner bounds its own subscribers'
    /// (`PublishEvaluationBound`).
    private func deliver(_ value: UnsafePointer<ReplicatedValue>, to entry: SubjectEntry) {
        publishBound.beginPublish()
        if entry.map != nil {
            change(entry, as: value.pointee)
        } else {
            entry.deliver(ReplicatedValue.message(at: value, in: entry.label))
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
