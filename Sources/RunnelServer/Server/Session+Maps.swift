import RunnelProtocol

/// A map's writes (version 1.3): `pub` with `key` (a write, or with `delete: true` a
/// removal). Its `create` is `SubjectCreation`'s, its subscriptions are `sub`'s
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
}
