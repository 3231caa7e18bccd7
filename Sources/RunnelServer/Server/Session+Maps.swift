import RunnelProtocol

/// A map's requests (version 1.3): `create` with `kind: "map"` (`ttl_s`, `max_keys`), and
/// `pub` with `key` (a write, or with `delete: true` a removal). Its subscriptions are `sub`'s
/// (`Session+Requests`, `SubjectEntry.mapOpening`) and its events `Session+MapDelivery`'s.
/// Loop thread only.
extension Session {
    /// `pub` with `key` or `delete`: a map's write or removal, answered as `pub` is. Kept out
    /// of `pub`'s own path, which only tests for the two fields.
    @inline(never)
    func publishKeyed(_ request: Request) throws(ProtocolError) {
        let name = try request.requiredString(.subject)
        guard let keyField = request.scanned[.key] else {
            throw ProtocolError(.badRequest, "field 'delete' applies only to a map's key: it needs field 'key'")
        }
        let key = try MapKey.read(keyField, of: request.scanned)
        let deletes = try request.bool(.delete) ?? false
        if deletes && request.scanned[.value] != nil {
            throw ProtocolError(.badRequest, "a pub with 'delete' carries no 'value'")
        }
        let entry = try context.mapTarget(named: name, for: rights)
        let receivers = entry.subscriberCount
        if deletes {
            try Publishing.remove(key, from: entry, in: subjects, bounding: publishBound, by: publisher)
        } else {
            try Publishing.publish(
                request.raw(.value) ?? .null, members: request.scanned.valueMembers, key: key, to: entry,
                in: subjects, counting: stats, bounding: publishBound, by: publisher)
        }
        guard let ref = request.ref else { return }
        // A durable map's change is acknowledged once on disk, where replies wait for it.
        if subjects.repliesWait(forValueOf: entry) {
            replyWhenWritten(ref: ref) { .published(receivers: receivers) }
        } else {
            write(SessionReply(ref: ref, .published(receivers: receivers)))
        }
    }

    /// `create` of a map: `ttl_s`, `max_keys` (at most `max_map_keys`, its default) and
    /// `durable` (with a `data_dir`, or in a cluster); not `capacity`, `value` nor `retain_s`.
    /// An existing map matches when its `ttl_s`, `max_keys` and durability do.
    func createMap(_ request: Request, name: String) throws(ProtocolError) {
        for field in ["capacity", "value", "retain_s"] where request.scanned.field(named: field) != nil {
            throw ProtocolError(.badRequest, "field '\(field)' does not apply to kind 'map'")
        }
        let durable = try request.bool(.durable) ?? false
        if durable && !subjects.keepsDurableSubjects {
            throw ProtocolError(.badRequest, "durable subjects need 'data_dir' in the server's configuration")
        }
        var ttl: Int64?
        if let field = request.scanned.field(named: "ttl_s") {
            guard let seconds = request.scanned.number(field),
                let milliseconds = RetainAge.milliseconds(seconds: seconds)
            else {
                throw ProtocolError(.badRequest, "field 'ttl_s' must be \(RetainAge.requirement)")
            }
            ttl = milliseconds
        }
        let limit = settings.config.maxMapKeys
        var maxKeys = limit
        if let field = request.scanned.field(named: "max_keys") {
            guard let number = request.scanned.number(field), let given = Int(exactly: number),
                (1...limit).contains(given)
            else {
                throw ProtocolError(
                    .badRequest, "field 'max_keys' must be an integer from 1 to \(limit) (max_map_keys)")
            }
            maxKeys = given
        }
        try finishCreate(
            request, name: name, policy: try slowConsumerPolicy(of: request),
            matches: { existing in
                guard let map = existing.map else { return false }
                return map.ttlMilliseconds == ttl && map.maxKeys == maxKeys && existing.isDurable == durable
            }
        ) { () throws(ProtocolError) in
            if durable { try subjects.checkDurableWrites() }
            return subjects.createMap(name, ttlMilliseconds: ttl, maxKeys: maxKeys, durable: durable)
        }
    }
}
