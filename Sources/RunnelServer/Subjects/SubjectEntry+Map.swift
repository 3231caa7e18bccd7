import Runnel
import RunnelJSON
import RunnelProtocol

/// A map subject's changes (version 1.3): its keys live in `map`, each change is delivered to
/// its subscribers through `subject` as a message labelled with its key's label (a removal as
/// a `Message.Mark`), and a subscription starts with a snapshot or the changes after its
/// `from`, then `synced`. Every change advances the subject's seq. Loop thread only.
extension SubjectEntry {
    /// Sets `key` to `raw` (published at `time`, with seq `seq`) and delivers the change.
    func write(_ raw: RawJSON, members: JSONMemberIndex, key: String, seq: UInt64, time: Int64) {
        guard let map else { preconditionFailure("a keyed write to a subject that is not a map") }
        let message = Message(label: map.label(of: key, in: label), raw: raw, members: members, seq: seq, time: time)
        map.ledger?.add(map.write(message))
        deliver(message)
    }

    /// Removes `key`, for `mark`'s reason, as the change with seq `seq` at `time`, and delivers
    /// it; false (and nothing changes, `seq` unused) when `key` is not live.
    @discardableResult
    func remove(_ key: String, _ mark: Message.Mark, seq: () -> UInt64, time: Int64) -> Bool {
        guard let map, let live = map.keys[key] else { return false }
        let removal = Message(mark: mark, label: live.label, seq: seq(), time: time)
        map.ledger?.add(map.remove(key, removal) ?? 0)
        deliver(removal)
        return true
    }

    /// A removal of `key` that is not live here, kept for `from` and counted in the map's
    /// position, but delivered to no one: in a cluster, a node that never held the key (it
    /// read the stream after the key's write had gone from it) still resumes a client that did.
    func recordRemoval(of key: String, _ mark: Message.Mark, seq: UInt64, time: Int64) {
        guard let map else { preconditionFailure("a removal from a subject that is not a map") }
        map.ledger?.add(
            map.recordRemoval(Message(mark: mark, label: map.label(of: key, in: label), seq: seq, time: time)))
        advance(to: seq)
    }

    /// What a subscription to the map gets, and its reply's `resumed`: after `from`, when the
    /// map still holds every change after it, those changes (`true`); else a snapshot of every
    /// live key (`false` when `from` was given); then `synced`, at the map's position; then
    /// its changes. With `key`, of that key only, through the map's `MapKeyRouter`.
    func mapOpening(from: Position?, only key: String? = nil) -> (signal: Signal<Message>, resumed: Bool?) {
        guard let map else { preconditionFailure("a map subscription to a subject that is not a map") }
        let resumed = from.map(canResume(after:))
        var opening: [Message]
        if let from, resumed == true {
            opening = map.changes(after: from.seq)
            if let key { opening.removeAll { $0.label.key != key } }
        } else if let key {
            opening = map.keys[key].map { [$0.message] } ?? []
        } else {
            opening = map.snapshot
        }
        // `synced` carries the map's position: where a client holding the table resumes.
        opening.append(Message(mark: .synced, label: label, seq: lastSeq, time: 0))
        guard let key, !isTerminated else { return (Signal.from(opening).concat(subject), resumed) }
        return (Signal.from(opening).concat(followers(of: key)), resumed)
    }

    /// The changes of `key` from now on, through the map's router (made at the first).
    private func followers(of key: String) -> Signal<Message> {
        if let keyRouter { return keyRouter.changes(of: key) }
        let router = MapKeyRouter()
        subject.subscribe(router)
        keyRouter = router
        return router.changes(of: key)
    }

    /// Lets go of the map's kept changes: `from` resumes only after `seq` from now on.
    func forgetChanges(of map: MapValues, through seq: UInt64) {
        map.ledger?.add(map.forgetChanges(through: seq))
    }

    /// Counts the map's values in `ledger`, and ages its keys there under `ttl_s`.
    func countKeys(of map: MapValues, in ledger: RetainedValues) {
        map.ledger = ledger
        ledger.add(map.bytes)
        if map.ttlMilliseconds != nil { ledger.age(self) }
    }

    func stopCountingKeys(of map: MapValues) {
        map.ledger?.add(-map.bytes)
        if map.ttlMilliseconds != nil { map.ledger?.stopAgeing(self) }
        map.ledger = nil
    }

    /// Removes the keys not written for `ttl_s` at `now`, reason `expired` (in a cluster, has
    /// the cluster remove them).
    func expireKeys(of map: MapValues, now: Int64) {
        guard acceptsValues else { return }
        if let expiresElsewhere = map.expiresElsewhere { return expiresElsewhere(now) }
        for key in map.expired(now: now) {
            remove(key.label.key!, .expired, seq: nextSeq, time: now)
            map.expiryHeard?(key.label.key!, lastSeq)
        }
    }
}
