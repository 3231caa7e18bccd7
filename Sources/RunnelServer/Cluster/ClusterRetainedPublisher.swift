import Dispatch
import RunnelJSON
import RunnelUV

/// How a clustered node sends retained values to JetStream: on a NATS connection of its own
/// that writes each publish at once (`sendAsap`), from a serial queue of its own, so an
/// acknowledged `pub` does not wait for cnats's flusher (which waits 1 ms for more before it
/// writes). No `write` runs on a loop (it may block): the publishes made before the job the
/// first of them schedules on the loop runs (about a loop turn's) cross to the queue as one
/// batch.
///
/// Thread rules: `publish` on the loop thread; the batch's publishes on `queue`. Lifetime
/// rule: made with the link, and lives as long.
final class ClusterRetainedPublisher: @unchecked Sendable {
    private let connection: NATSConnection
    private let jetStream: NATSJetStream
    private let queue = DispatchQueue(label: "runneld.cluster.publish")
    private let scheduler: LoopScheduler
    /// Where JetStream's answers go, and a publish cnats refused.
    private let published: @Sendable (_ id: String, _ error: String?) -> Void
    /// What this loop turn publishes, sent as one batch at its end.
    private var batch: [(subject: String, value: RawJSON, id: String)] = []

    init(
        connection: NATSConnection, scheduler: LoopScheduler,
        published: @escaping @Sendable (_ id: String, _ error: String?) -> Void
    ) throws(NATSError) {
        self.connection = connection
        self.scheduler = scheduler
        self.published = published
        jetStream = try connection.jetStream(
            wait: ClusterLink.jetStreamWait, handlers: NATSJetStreamHandlers(message: { _ in }, published: published))
    }

    /// Publishes `value` on `subject` as `id` (its `Nats-Msg-Id`); JetStream's answer, or the
    /// reason it was not sent, goes to `published` with `id`.
    func publish(_ value: RawJSON, on subject: String, id: String) {
        if batch.isEmpty { scheduler.schedule { [self] in send() } }
        batch.append((subject, value, id))
    }

    private func send() {
        let items = batch
        batch = []
        queue.async { [jetStream, published] in
            for item in items {
                do throws(NATSError) {
                    try withExtendedLifetime(item.value) { () throws(NATSError) in
                        try jetStream.publish(item.subject, payload: item.value.buffer.bytes, id: item.id)
                    }
                } catch {
                    published(item.id, "\(error)")
                }
            }
        }
    }

    /// Closes the connection (the process is stopping).
    func close() { connection.close() }
}
