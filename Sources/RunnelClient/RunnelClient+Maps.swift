import RunnelJSON

/// Map subjects (protocol version 1.3, "Keyed subjects: maps"): removing a key, and a
/// subscription that keeps the map's table. A key is written with `publish(_:_:key:)`.
extension RunnelClient {
    /// Removes `key` from the map subject `subject` (a `pub` with `delete`; a key the map does not
    /// hold is no error), as `publish` sends a value: without `reply`, nil once queued; with it,
    /// the server's `receivers`. Not `request("delete", ...)`, which deletes the subject itself.
    @discardableResult
    public func deleteKey(_ subject: String, key: String, reply: Bool = false, timeout: Duration? = nil)
        async throws(RunnelError) -> Int?
    {
        var request = RequestLine(op: "pub")
        request.string("subject", subject)
        request.string("key", key)
        request.bool("delete", true)
        return try await publish(request, reply: reply, timeout: timeout)
    }

    /// Subscribes to the map subject `subject` and keeps its table (`MapSubscription`); returns
    /// once the server has accepted the `sub`, before the table is synced (`waitSynced`).
    /// `options` as `subscribe`'s, but not `from` (it starts from a snapshot and resumes from its
    /// own position) nor `since` and `until` (the server refuses them on a map): `bad_request`,
    /// as is a pattern. A subject that is not a map never syncs.
    public func subscribeMap(
        _ subject: String, _ options: SubscribeOptions = SubscribeOptions(), timeout: Duration? = nil
    ) async throws(RunnelError) -> MapSubscription {
        guard !subject.split(separator: ".").contains(where: { $0 == "*" || $0 == ">" }) else {
            throw RunnelError(code: "bad_request", message: "subscribeMap takes a map subject's name, not a pattern")
        }
        guard options.from == nil else {
            throw RunnelError(
                code: "bad_request",
                message: "a map subscription starts from a snapshot and resumes from its own position: no from")
        }
        return MapSubscription(try await subscribe(subject, options, keepsTable: true, timeout: timeout))
    }
}
