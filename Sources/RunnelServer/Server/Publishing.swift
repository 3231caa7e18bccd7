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
    package static func keyNeeded(_ entry: SubjectEntry) -> ProtocolError {
        ProtocolError(.badRequest, "subject '\(entry.name)' is a map: pub needs field 'key'")
    }
}

extension Server: ReplicaOwner {
    func subjectToReplicate(_ name: String) throws(ProtocolError) -> SubjectEntry {
        try sessionContext.subjectForUse(name, under: sessionSettings)
    }

    /// The subject `pub` names, when `grant` may publish to it: an existing one as it is (its
    /// name was checked when it was created), else a valid name, created when `auto_create` is
    /// on. A refusal creates nothing.
    package func publishTarget(named name: String, for grant: TokenGrant) throws(ProtocolError) -> (
        entry: SubjectEntry, made: Bool
    ) {
        try sessionContext.publishTarget(named: name, for: grant, under: sessionSettings)
    }

    /// Publishes a `pub` another loop's session sent (`ReplicaSource`) as a `pub` here would
    /// be, and hands `then` what its reply says: the receivers (once the value is written,
    /// where replies wait for that, or for a subject the `pub` made), or the error. Another
    /// loop's publishers are not paused by a lagging subscriber here (`forwardedPublisher`
    /// only counts the pause).
    func publish(forwarded publish: ForwardedPublish, then: @escaping (Result<Int, ProtocolError>) -> Void) {
        do throws(ProtocolError) {
            let (entry, made) = try publishTarget(named: publish.subject, for: publish.grant)
            if entry.map != nil { throw Publishing.keyNeeded(entry) }
            let waits = made || subjects.repliesWait(forValueOf: entry)
            let receivers = entry.subscriberCount
            try Publishing.publish(
                publish.value, members: publish.members, to: entry, in: subjects, counting: stats,
                bounding: publishEvaluationBound, by: forwardedPublisher)
            guard waits else { return then(.success(receivers)) }
            subjects.whenWritten { error in then(error.map { .failure($0) } ?? .success(entry.subscriberCount)) }
        } catch {
            then(.failure(error))
        }
    }

    /// Ends `subject` as another loop's session asked (`ReplicaSource`; its rights were checked
    /// there), and hands `then` the error its reply gives, nil for `done` (once written, where
    /// replies wait for that).
    func end(_ subject: String, _ ending: SubjectEnding, then: @escaping (ProtocolError?) -> Void) {
        do throws(ProtocolError) {
            try subjects.checkShared()
            guard try ending.apply(to: subject, in: subjects) else { return then(nil) }
            subjects.whenWritten(then)
        } catch {
            then(error)
        }
    }

    /// The map a keyed write names, when `grant` may publish to it (`SessionContext.mapTarget`).
    package func mapTarget(named name: String, for grant: TokenGrant) throws(ProtocolError) -> SubjectEntry {
        try sessionContext.mapTarget(named: name, for: grant)
    }
}
