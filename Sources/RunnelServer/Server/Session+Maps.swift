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
        let value = deletes ? nil : request.raw(.value) ?? .null
        let members = request.scanned.valueMembers
        if let replicas = context.replicas {
            return forward(
                .publishKeyed(
                    subject: name, key: key, value: value, members: members, grant: rights,
                    publisher: replicas.number(of: publisher)),
                ref: request.ref, to: replicas, weighing: value?.count ?? 0, quiet: request.ref == nil)
        }
        let entry = try context.mapTarget(named: name, for: rights)
        let (receivers, waits) = try Publishing.change(
            key, to: value, members: members, of: entry, in: subjects, counting: stats, bounding: publishBound,
            by: publisher)
        guard let ref = request.ref else { return }
        if waits {
            replyWhenWritten(ref: ref) { .published(receivers: receivers) }
        } else {
            write(SessionReply(ref: ref, .published(receivers: receivers)))
        }
    }
}
