import Runnel
import RunnelJSON
import RunnelProtocol

/// The entry of a loop's replica of a subject another loop owns (decision 0011), made from the
/// owner's snapshot (`ReplicaSnapshot`) in the subject's shape, with the values it keeps and
/// its end; `SubjectReplicas` feeds it from then on.
///
/// Thread rules: the replica's loop. Lifetime rule: holds nothing.
enum ReplicaEntries {
    /// The keys and kept changes of a map's replica, as `state` describes the map's. Its keys
    /// do not expire here: the owner's removals come through the feed.
    private static func map(of state: ReplicaMapState, in label: SubjectLabel) -> MapValues {
        let map = MapValues(ttlMilliseconds: state.ttlMilliseconds, maxKeys: state.maxKeys)
        map.expiresElsewhere = { _ in }
        for key in state.keys {
            map.restore(key.message(in: map.label(of: key.key!, in: label)))
        }
        map.restoreChanges(
            state.changes.map { $0.message(in: map.label(of: $0.key!, in: label)) }, after: state.resumesAfter)
        return map
    }

    /// A replica as `snapshot` describes its subject, fed by its feed from now on, its kept
    /// values aged by `ledger`.
    static func entry(of snapshot: ReplicaSnapshot, countingIn ledger: RetainedValues) -> SubjectEntry {
        let label = SubjectLabel(snapshot.name, epoch: snapshot.epoch)
        label.slowConsumer = snapshot.slowConsumer
        let dropped = DroppedValueTimes()
        if let newest = snapshot.droppedNewest { dropped.noteTime(newest) }
        let values = snapshot.values.map { $0.message(in: label) }
        let terminal: Event<Message>? =
            switch snapshot.end {
            case nil: nil
            case .completed, .deleted: .completed
            case .failed(let error): .error(error)
            }
        let subject = SubjectEntry.librarySubject(
            of: snapshot.kind, label: label, capacity: snapshot.capacity ?? 0, retaining: values, terminal: terminal,
            maxReplayBytes: ledger.maxReplayBytes, dropped: dropped)
        let map = snapshot.map.map { Self.map(of: $0, in: label) }
        let entry = SubjectEntry(
            label: label, kind: snapshot.kind, capacity: snapshot.capacity,
            retainMilliseconds: snapshot.retainMilliseconds, durableID: nil, subject: subject, dropped: dropped,
            lastSeq: snapshot.lastSeq, durable: snapshot.isDurable, map: map)
        entry.replicaFeed = snapshot.feed
        entry.countRetained(in: ledger)
        return entry
    }
}
