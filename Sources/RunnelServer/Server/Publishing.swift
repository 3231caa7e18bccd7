import RunnelJSON
import RunnelProtocol

/// The steps of `pub` that do not depend on the front door it came through (a request line,
/// an HTTP `POST /pub/SUBJECT`), written once. Loop thread only.
package enum Publishing {
    /// Publishes `value` (with `members`, where the members of an object sit if its scan noted
    /// them) to `entry` in `store` and counts it: `terminated` when the subject has ended,
    /// `limit` when the subject keeps values and the store's retained bytes have no room for
    /// it, `storage` when a durable subject cannot be written now, `unavailable` when it keeps
    /// values and a clustered node's link is down. A durable value is on
    /// disk once `whenWritten` runs. The fan-out's stage evaluations are held to `bound`; a
    /// subscriber it puts over the soft limit may pause `publisher` (`Session+SlowConsumer`).
    /// (A function of the store as a value, not a protocol extension: a generic one costs
    /// every `pub` calls through value witnesses.)
    @inline(__always)
    package static func publish(
        _ value: RawJSON, members: JSONMemberIndex = JSONMemberIndex(), to entry: SubjectEntry,
        in store: any SubjectStore, counting stats: ServerStats,
        bounding bound: PublishEvaluationBound, by publisher: PublisherGate
    ) throws(ProtocolError) {
        try checkAccepts(entry)
        if entry.retainsValues {
            try store.checkShared()
            try store.retained.checkRoom(for: value, in: entry.name)
        }
        if entry.isDurable { try store.checkDurableWrites() }
        stats.counts.published &+= 1
        publisher.publishing { store.publish(value, members: members, to: entry, bounding: bound) }
    }
}

extension Publishing {
    /// When a `pub`'s reply may say how many subscriptions received the value.
    enum Receipt {
        /// At once: this many, counted before the value went out.
        case now(receivers: Int)
        /// Once `store.whenWritten` runs (a durable subject's value where replies wait for the
        /// disk, or a subject this `pub` made: in a cluster, a definition another node wrote
        /// first in another shape makes the reply `kind_mismatch`, the value having reached
        /// no subject), counting the subject's subscribers then.
        case afterWrite
    }

    /// `publish` for a `pub` that is answered: `made`, the `pub` made `entry`. One rule for a
    /// session's own `pub` and one another loop's session sent here. `countsReceivers`: false
    /// where the answer's count is not read (`.now(receivers: 0)`), as for all but the last of
    /// another loop's `pub`s: counting takes the subject's lock.
    @inline(__always)
    static func publish(
        _ value: RawJSON, members: JSONMemberIndex, to entry: SubjectEntry, made: Bool, in store: any SubjectStore,
        counting stats: ServerStats, bounding bound: PublishEvaluationBound, by publisher: PublisherGate,
        countsReceivers: Bool = true
    ) throws(ProtocolError) -> Receipt {
        let waits = made || store.repliesWait(forValueOf: entry)
        let receivers = waits || !countsReceivers ? 0 : entry.subscriberCount
        try publish(value, members: members, to: entry, in: store, counting: stats, bounding: bound, by: publisher)
        return waits ? .afterWrite : .now(receivers: receivers)
    }

    /// Sets `key` of the map `entry` to `value`, through `publish`'s steps (a map keeps values):
    /// also `limit` when
    /// `key` would be a key past the map's `max_keys` (nothing changes then).
    package static func publish(
        _ value: RawJSON, members: JSONMemberIndex = JSONMemberIndex(), key: String, to entry: SubjectEntry,
        in store: any SubjectStore, counting stats: ServerStats, bounding bound: PublishEvaluationBound,
        by publisher: PublisherGate
    ) throws(ProtocolError) {
        guard let map = entry.map else { throw notAMap(entry) }
        try checkAccepts(entry)
        try store.checkShared()
        if map.isFull(adding: key) {
            throw ProtocolError(.limit, "map '\(entry.name)' holds \(map.count) keys (max_keys \(map.maxKeys))")
        }
        try store.retained.checkRoom(for: value, in: entry.name)
        if entry.isDurable { try store.checkDurableWrites() }
        stats.counts.published &+= 1
        publisher.publishing { store.publish(value, members: members, key: key, to: entry, bounding: bound) }
    }

    /// Removes `key` from the map `entry` (reason `deleted`); removing a key that is not live
    /// changes nothing and is no error.
    package static func remove(
        _ key: String, from entry: SubjectEntry, in store: any SubjectStore, bounding bound: PublishEvaluationBound,
        by publisher: PublisherGate
    ) throws(ProtocolError) {
        guard entry.map != nil else { throw notAMap(entry) }
        try checkAccepts(entry)
        try store.checkShared()
        if entry.isDurable { try store.checkDurableWrites() }
        publisher.publishing { _ = store.remove(key, from: entry, bounding: bound) }
    }

    /// A keyed `pub` to the map `entry`: `value` written to `key`, or with nil the key removed.
    /// One rule for a session's own and one another loop's session sent here. Returns the
    /// map's subscribers before the change (its reply's `receivers`) and whether the reply
    /// waits for `store.whenWritten` (a durable map's change is acknowledged once on disk,
    /// where replies wait for it).
    static func change(
        _ key: String, to value: RawJSON?, members: JSONMemberIndex, of entry: SubjectEntry, in store: any SubjectStore,
        counting stats: ServerStats, bounding bound: PublishEvaluationBound, by publisher: PublisherGate
    ) throws(ProtocolError) -> (receivers: Int, waits: Bool) {
        let receivers = entry.subscriberCount
        if let value {
            try publish(
                value, members: members, key: key, to: entry, in: store, counting: stats, bounding: bound, by: publisher
            )
        } else {
            try remove(key, from: entry, in: store, bounding: bound, by: publisher)
        }
        return (receivers, store.repliesWait(forValueOf: entry))
    }

    /// `terminated` when `entry` has ended: a `pub` of any kind finds it so.
    @inline(__always)
    static func checkAccepts(_ entry: SubjectEntry) throws(ProtocolError) {
        guard entry.acceptsValues else { throw ProtocolError(.terminated, "subject '\(entry.name)' is terminated") }
    }

    /// What a keyed `pub` to a subject of another kind gets.
    @inline(never)
    static func notAMap(_ entry: SubjectEntry) -> ProtocolError {
        ProtocolError(.badRequest, "field 'key' applies only to kind 'map'; subject '\(entry.name)' is \(entry.kind)")
    }

    /// What a `pub` without a key to a map gets.
    @inline(never)
    static func keyNeeded(_ entry: SubjectEntry) -> ProtocolError {
        ProtocolError(.badRequest, "subject '\(entry.name)' is a map: pub needs field 'key'")
    }
}

extension Server {
    /// The subject `pub` names, when `grant` may publish to it: an existing one as it is (its
    /// name was checked when it was created), else a valid name, created when `auto_create` is
    /// on. A refusal creates nothing.
    func publishTarget(named name: String, for grant: TokenGrant) throws(ProtocolError) -> (
        entry: SubjectEntry, made: Bool
    ) {
        try sessionContext.publishTarget(named: name, for: grant, under: sessionSettings)
    }

    /// The map a keyed write names, when `grant` may publish to it (`SessionContext.mapTarget`).
    func mapTarget(named name: String, for grant: TokenGrant) throws(ProtocolError) -> SubjectEntry {
        try sessionContext.mapTarget(named: name, for: grant)
    }

    /// The checks of a write to `name` that need no subject (a reserved name, `grant`'s
    /// rights), made on any loop before an HTTP request's body is read; the owner makes every
    /// check as it publishes (`publish(_:by:then:)`).
    package func checkPublish(to name: String, for grant: TokenGrant) throws(ProtocolError) {
        try SystemSubjects.checkWritable(name)
        try grant.checkPublish(to: name)
    }
}
