import RunnelProtocol

/// A map subject's keys (version 1.3): the latest value of each, the changes kept for `from`,
/// and, under `ttl_s`, the keys in the order they were last written, so expiry looks at the
/// oldest only (one sweep for every map, never a timer per key).
///
/// Invariants: `keys` holds every live key once; `changes` holds at most `changeCapacity`
/// changes, oldest first from `changesStart`, with seqs that only grow, every change after
/// `resumesAfter` (a cluster's seqs may skip numbers: a skip is no change); under `ttl_s` the
/// chain from `oldest` to `newest` holds every live key once, ordered by the time of its last
/// write.
///
/// Thread rules: loop thread only, like its `SubjectEntry`. Lifetime rule: owned by its entry;
/// a key's node by `keys` (and the write-order chain, while the key lives).
package final class MapValues {
    /// A live key: its label, which every value written to it carries, and its latest value.
    final class Key {
        let label: SubjectLabel
        var message: Message
        /// The next key in write order (written later), under `ttl_s`.
        fileprivate var newer: Key?
        /// The previous one (written earlier).
        fileprivate unowned(unsafe) var older: Key?

        init(label: SubjectLabel, message: Message) {
            self.label = label
            self.message = message
        }
    }

    private(set) var keys: [String: Key] = [:]
    /// How long a key lives unwritten (`ttl_s`), in milliseconds; nil: until removed.
    let ttlMilliseconds: Int64?
    /// The most keys it holds (`max_keys`).
    let maxKeys: Int
    /// How many changes `from` can resume after: `max(1024, max_keys)`.
    let changeCapacity: Int
    /// The last changes, a ring: `changes[changesStart]` is the oldest once it is full.
    private var changes: [Message] = []
    private var changesStart = 0
    /// `changes` holds every change with a seq above this one.
    private(set) var resumesAfter: UInt64 = 0
    /// The bytes of the live keys' values and of the changes kept (a value is counted in both
    /// while it is a key's latest: a bound, not a measure), counted in `ledger` while the store
    /// holds the map, so `max_retained_bytes` bounds what a map keeps for `from` too.
    private(set) var bytes = 0
    var ledger: RetainedValues?
    /// What the store that keeps the map durable hears of each key that expires, and the
    /// removal's seq (`DurableSubjectStore+Maps`); nil for a map in memory only.
    var expiryHeard: ((String, UInt64) -> Void)?
    /// In a cluster, where the sweep's time goes instead of removing keys here: the cluster
    /// removes them, on every node alike (`ClusterSubjectStore+Maps`).
    var expiresElsewhere: ((_ now: Int64) -> Void)?
    /// The key written longest ago and the latest, under `ttl_s`.
    private var oldest: Key?
    private unowned(unsafe) var newest: Key?

    init(ttlMilliseconds: Int64?, maxKeys: Int) {
        precondition(maxKeys >= 1, "a map holds at least one key")
        self.ttlMilliseconds = ttlMilliseconds
        self.maxKeys = maxKeys
        changeCapacity = max(1024, maxKeys)
    }

    var count: Int { keys.count }

    /// Whether writing `key` would add a key past `max_keys`.
    func isFull(adding key: String) -> Bool { keys.count >= maxKeys && keys[key] == nil }

    /// The label of `key`: its live key's, or a new one.
    func label(of key: String, in subject: SubjectLabel) -> SubjectLabel {
        keys[key]?.label ?? SubjectLabel(key: key, of: subject)
    }

    /// Sets the key `message` is labelled with to `message`; returns the change in `bytes`.
    func write(_ message: Message) -> Int {
        let key = message.label.key!
        let size = RetainedValues.weight(message)
        let node: Key
        var delta = size
        if let live = keys[key] {
            delta -= RetainedValues.weight(live.message)
            live.message = message
            node = live
            if ttlMilliseconds != nil { unlink(node) }
        } else {
            node = Key(label: message.label, message: message)
            keys[key] = node
        }
        if ttlMilliseconds != nil { append(node) }
        delta += record(message)
        bytes += delta
        return delta
    }

    /// Takes in `message`, a key's latest write as a journal kept it: a live key, no change
    /// (what `from` resumes after starts with the next).
    func restore(_ message: Message) {
        let node = Key(label: message.label, message: message)
        keys[message.label.key!] = node
        if ttlMilliseconds != nil { append(node) }
        bytes += RetainedValues.weight(message)
    }

    /// Takes in the changes another loop's copy of the map keeps for `from`, oldest first, and
    /// the seq after which it keeps them all (a replica's, decision 0011), its keys restored
    /// already: `from` resumes here as it would there.
    func restoreChanges(_ kept: [Message], after seq: UInt64) {
        resumesAfter = seq
        for change in kept { bytes += record(change) }
    }

    /// Removes `key` with `removal` (its mark); returns the change in `bytes`, or nil when the
    /// key is not live.
    func remove(_ key: String, _ removal: Message) -> Int? {
        guard let node = keys.removeValue(forKey: key) else { return nil }
        if ttlMilliseconds != nil { unlink(node) }
        let delta = record(removal) - RetainedValues.weight(node.message)
        bytes += delta
        return delta
    }

    /// Lets go of the kept changes: what `from` resumes after starts after `seq` (a journal's
    /// or a cluster stream's changes up to it are not all known here). Returns the change in
    /// `bytes`.
    func forgetChanges(through seq: UInt64) -> Int {
        let delta = -changes.reduce(0) { $0 + ($1.mark == nil ? RetainedValues.weight($1) : 0) }
        changes = []
        changesStart = 0
        resumesAfter = seq
        bytes += delta
        return delta
    }

    /// Keeps `removal` for `from`, though its key is not live here (in a cluster, a node that
    /// read the stream after the key's write was gone from it); returns the change in `bytes`.
    func recordRemoval(_ removal: Message) -> Int {
        let delta = record(removal)
        bytes += delta
        return delta
    }

    /// The keys not written since `now - ttl_s`, oldest first.
    func expired(now: Int64) -> [Key] {
        guard let ttlMilliseconds else { return [] }
        var due: [Key] = []
        var node = oldest
        while let current = node, current.message.time <= now - ttlMilliseconds {
            due.append(current)
            node = current.newer
        }
        return due
    }

    /// The live keys' latest values, in no order: a snapshot.
    var snapshot: [Message] { keys.values.map(\.message) }

    /// The kept changes with seqs after `seq`, oldest first.
    func changes(after seq: UInt64) -> [Message] {
        let ordered = changes[changesStart...] + changes[..<changesStart]
        return ordered.filter { $0.seq! > seq }
    }

    /// Keeps `change` for `from`, letting the oldest go when full; returns the change in bytes.
    private func record(_ change: Message) -> Int {
        let size = change.mark == nil ? RetainedValues.weight(change) : 0
        guard changes.count == changeCapacity else {
            changes.append(change)
            return size
        }
        let evicted = changes[changesStart]
        resumesAfter = evicted.seq!
        changes[changesStart] = change
        changesStart = (changesStart + 1) % changeCapacity
        return size - (evicted.mark == nil ? RetainedValues.weight(evicted) : 0)
    }

    private func append(_ node: Key) {
        node.older = newest
        node.newer = nil
        if let newest { newest.newer = node } else { oldest = node }
        newest = node
    }

    private func unlink(_ node: Key) {
        let newer = node.newer
        if let older = node.older { older.newer = newer } else { oldest = newer }
        if let newer { newer.older = node.older } else { newest = node.older }
        node.newer = nil
        node.older = nil
    }
}
