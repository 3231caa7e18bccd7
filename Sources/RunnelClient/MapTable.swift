import RunnelJSON

/// A map subscription's table (version 1.3): key -> value as its stages made them, complete from
/// each `synced` on; while a snapshot that did not resume comes, the new table built apart
/// (`fresh`) and swapped in whole at `synced`, its differences from the old one the changes to
/// yield. Also the tasks waiting for it to be synced (`MapSubscription.waitSynced`).
///
/// Thread rules: only inside the subscription's `state.withLock` (a part of
/// `SubscriptionState`). Lifetime rule: the subscription's.
struct MapTable {
    /// The table now: empty until the first `synced`.
    private(set) var entries: [String: JSONValue] = [:]
    /// The table a snapshot is building, with each value as it came; nil when changes go to
    /// `entries` itself (live, or resumed).
    private var fresh: [String: Value]? = [:]
    /// From each `synced` until the connection is lost.
    private(set) var isSynced = false
    /// The tasks waiting for `synced` (or the end), by an id of `takeWaiterID`'s (their deadline's
    /// timer removes one); each is given nil, or the error that ended the subscription.
    var syncWaiters: [Int: CheckedContinuation<RunnelError?, Never>] = [:]
    private var nextWaiterID = 1

    /// The server answered a `sub`: with `resumed: true` the changes missed come, applied to the
    /// table kept; otherwise a snapshot, built apart.
    mutating func answered(resumed: Bool) {
        fresh = resumed ? nil : [:]
        isSynced = false
    }

    /// The connection is lost: the table is no longer current (it is kept).
    mutating func lost() { isSynced = false }

    /// A write: the change to yield, or nil while a snapshot is built apart.
    mutating func write(_ value: Value, key: String) -> MapEvent? {
        if fresh != nil {
            fresh?[key] = value
            return nil
        }
        entries[key] = value.value
        return .value(value)
    }

    /// A removal: the change to yield, or nil while a snapshot is built apart.
    mutating func remove(_ removed: Removed) -> MapEvent? {
        if fresh != nil {
            fresh?[removed.key] = nil
            return nil
        }
        entries[removed.key] = nil
        return .removed(removed)
    }

    /// `synced`: a snapshot built apart replaces the table whole; returns its differences from the
    /// old one (a value for each key new or of another value, a `notResumed` removal for each key
    /// gone), then `.synced`.
    mutating func synced(subject: String) -> [MapEvent] {
        var changes: [MapEvent] = []
        if let built = fresh {
            fresh = nil
            let old = entries
            var table: [String: JSONValue] = [:]
            table.reserveCapacity(built.count)
            for (key, value) in built {
                let decoded = value.value
                table[key] = decoded
                if old[key] != decoded { changes.append(.value(value)) }
            }
            for key in old.keys where built[key] == nil {
                changes.append(.removed(Removed(key: key, reason: .notResumed, subject: subject)))
            }
            entries = table
        }
        isSynced = true
        changes.append(.synced)
        return changes
    }

    mutating func takeWaiterID() -> Int {
        defer { nextWaiterID += 1 }
        return nextWaiterID
    }

    mutating func takeSyncWaiters() -> [CheckedContinuation<RunnelError?, Never>] {
        defer { syncWaiters = [:] }
        return Array(syncWaiters.values)
    }
}
