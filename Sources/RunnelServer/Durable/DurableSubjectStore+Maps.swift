import Runnel
import RunnelJSON
import RunnelProtocol

/// Durable maps (version 1.3): a durable map's changes reach its subscribers at once, as a map
/// in memory's do, and are appended to the journal in the same order (a write as the key's
/// new row, a removal, deleted or expired, as its row's end); a `pub`'s reply waits for the
/// disk where replies do (`repliesWait(forValueOf:)`), so what is acknowledged is on disk.
/// Under `fsync = always` a subscriber may so see a change a crash then loses, unlike a durable
/// replay subject's values, which wait for the disk: a change to a map is delivered in its
/// place among the map's others, whose liveness the next change reads. Loop thread only.
extension DurableSubjectStore {
    package func createMap(_ name: String, ttlMilliseconds: Int64?, maxKeys: Int, durable: Bool) -> SubjectEntry {
        guard durable else {
            return local.createMap(name, ttlMilliseconds: ttlMilliseconds, maxKeys: maxKeys, durable: false)
        }
        return adoptNew { id, created in
            let entry = SubjectEntry(
                name: name, kind: .map, capacity: nil, retainMilliseconds: ttlMilliseconds, initial: nil,
                maxReplayBytes: retained.maxReplayBytes, maxKeys: maxKeys, durableID: id)
            journalExpiries(of: entry, id: id)
            let creation = JournalChange.create(
                id: id, name: name, kind: .map, capacity: maxKeys, retainMilliseconds: ttlMilliseconds,
                epoch: entry.epoch, initial: nil, time: created)
            return (entry, creation)
        }
    }

    package func publish(
        _ value: RawJSON, members: JSONMemberIndex, key: String, to entry: SubjectEntry,
        bounding bound: PublishEvaluationBound
    ) {
        local.publish(value, members: members, key: key, to: entry, bounding: bound)
        guard let id = entry.durableID, let written = entry.map?.keys[key]?.message else { return }
        append(.write(id: id, key: key, seq: entry.lastSeq, value: value.buffer, time: written.time))
    }

    package func remove(_ key: String, from entry: SubjectEntry, bounding bound: PublishEvaluationBound) -> Bool {
        guard local.remove(key, from: entry, bounding: bound) else { return false }
        if let id = entry.durableID { append(.remove(id: id, key: key, seq: entry.lastSeq)) }
        return true
    }

    /// A stored map, with its live keys (none of its changes: after a restart it resumes only a
    /// client at its latest position), journalling its expiries from now on.
    func restoreMap(_ stored: StoredSubject) -> SubjectEntry {
        let label = SubjectLabel(stored.name, epoch: stored.epoch)
        let map = MapValues(ttlMilliseconds: stored.retainMilliseconds, maxKeys: stored.capacity ?? 1)
        for key in stored.keys {
            map.restore(
                Message(
                    label: map.label(of: key.key, in: label), raw: key.value, members: JSONMemberIndex(),
                    seq: key.seq, time: key.time))
        }
        _ = map.forgetChanges(through: stored.seq)
        let subject = Subject<Message>(threading: .confined)
        if let terminal = stored.terminal {
            if let message = terminal {
                subject.sendError(ProtocolError(.subjectError, message))
            } else {
                subject.sendCompleted()
            }
        }
        let entry = SubjectEntry(
            label: label, kind: .map, capacity: nil, retainMilliseconds: stored.retainMilliseconds,
            durableID: stored.id, subject: subject, dropped: DroppedValueTimes(), lastSeq: stored.seq, map: map)
        journalExpiries(of: entry, id: stored.id)
        return entry
    }

    /// The sweep removes a map's expired keys itself (`SubjectEntry.expireKeys`): each is
    /// journalled as it goes.
    private func journalExpiries(of entry: SubjectEntry, id: Int64) {
        entry.map?.expiryHeard = { [weak self] key, seq in self?.append(.remove(id: id, key: key, seq: seq)) }
    }
}
