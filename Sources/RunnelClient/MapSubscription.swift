import RunnelJSON

/// A subscription to a map subject that keeps its table (version 1.3; docs/protocol.md, "Keyed
/// subjects: maps"): `table`, key -> value as the subscription's stages made them, complete once
/// synced (`isSynced`, `waitSynced`). Iterated, it yields the table's changes, each once the
/// table has changed: `.value` (with its `key`) for a write, `.removed` for a removal, `.synced`
/// each time the table is complete and current, and `.gap`s. The snapshot comes as changes too:
/// a value per key, then `.synced`.
///
/// The table is updated as the reader thread reads the lines, whatever the consumer takes: past
/// `ClientOptions.buffer`, changes are dropped from the iteration (a `Gap` `overflow`), never
/// from the table. After a reconnect it resumes from the table's position (`synced`'s, or the
/// last change's after it): on `resumed: true` the changes missed are applied to the table kept
/// and yielded, then `.synced`; otherwise (a `Gap` `notResumed` first) the new snapshot is built
/// apart while `table` stays the old one, and swapped in whole at `synced`, its differences
/// yielded then (a `.removed` with reason `notResumed` for a key gone): never half a table.
///
/// Thread rules: every member from any task; the table and the buffer are behind the
/// subscription's mutex, updated by the client's reader thread; the iteration is one consumer
/// task's at a time. Lifetime rule: holds its `Subscription`, which the client holds while it is
/// live, as a plain subscription's.
public final class MapSubscription: AsyncSequence, Sendable {
    public typealias Element = MapEvent

    let subscription: Subscription

    init(_ subscription: Subscription) { self.subscription = subscription }

    /// The subscription's id, which it keeps across reconnects.
    public var sid: String { subscription.sid }
    public var subject: String { subscription.subject }

    /// The table now, key -> value: empty until the first `synced`; after a rebuild, the new table
    /// (read it here again rather than keep a copy).
    public var table: [String: JSONValue] { subscription.table }

    /// Whether the table is complete and current: from each `synced` until the connection is lost.
    public var isSynced: Bool { subscription.isSynced }

    /// The table's position: `synced`'s or the newest change's after it; nil while the first
    /// snapshot (or a rebuild's) is read.
    public var position: String? { subscription.position }

    /// Returns once the table is synced (at once when it is) or the subscription has ended quietly
    /// (`unsubscribe()`, the client's `close()`); throws the error that ended the subscription
    /// before, or `timeout` past `timeout` (default: `ClientOptions.callTimeout`).
    public func waitSynced(timeout: Duration? = nil) async throws(RunnelError) {
        try await subscription.waitSynced(timeout: timeout)
    }

    /// Ends the subscription here (what it buffered is dropped) and in the server (`unsub`).
    public func unsubscribe() async { await subscription.unsubscribe() }

    public func makeAsyncIterator() -> Iterator { Iterator(subscription: subscription) }

    /// Takes the table's changes one by one.
    ///
    /// Thread rules: one task at a time. Lifetime rule: holds the subscription.
    public struct Iterator: AsyncIteratorProtocol {
        let subscription: Subscription

        public mutating func next() async throws -> MapEvent? {
            try await subscription.nextEvent()
        }
    }
}
