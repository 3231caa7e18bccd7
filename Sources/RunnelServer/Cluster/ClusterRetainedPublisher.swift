import Dispatch
import RunnelBytes
import RunnelUV

/// How a clustered node sends retained values to JetStream: on a NATS connection of its own
/// that writes each publish at once (`sendAsap`), from a serial queue of its own, so an
/// acknowledged `pub` does not wait for cnats's flusher (which waits 1 ms for more before it
/// writes). No `write` runs on a loop (it may block): a turn's publishes cross to the queue as
/// one batch (`LoopOutbox`).
///
/// Thread rules: `publish` on the loop thread; the batch's publishes on `queue`. Lifetime
/// rule: made with the link, and lives as long.
final class ClusterRetainedPublisher: @unchecked Sendable {
    private let connection: NATSConnection
    private let jetStream: NATSJetStream
    /// What this loop turn publishes, handed to `runneld.cluster.publish` as one batch.
    private let outbox: LoopOutbox<(subject: String, payload: ByteBuffer, id: String, expectingLast: UInt64?)>

    init(
        connection: NATSConnection, scheduler: LoopScheduler,
        published: @escaping @Sendable (_ id: String, _ answer: NATSPublishAnswer) -> Void
    ) throws(NATSError) {
        self.connection = connection
        let jetStream = try connection.jetStream(
            wait: ClusterLink.jetStreamWait, handlers: NATSJetStreamHandlers(message: { _ in }, published: published))
        self.jetStream = jetStream
        let queue = DispatchQueue(label: "runneld.cluster.publish")
        outbox = LoopOutbox(loop: scheduler) { items in
            queue.async {
                for item in items {
                    do throws(NATSError) {
                        try withExtendedLifetime(item.payload) { () throws(NATSError) in
                            try jetStream.publish(
                                item.subject, payload: item.payload.bytes, id: item.id,
                                expectingLast: item.expectingLast)
                        }
                    } catch {
                        published(item.id, .failed("\(error)"))
                    }
                }
            }
        }
    }

    /// Publishes `payload` on `subject` as `id` (its `Nats-Msg-Id`), only over the subject's
    /// value with seq `expectingLast` when given; JetStream's answer, or the reason it was not
    /// sent, goes to `published` with `id`.
    func publish(_ payload: ByteBuffer, on subject: String, id: String, expectingLast: UInt64? = nil) {
        outbox.post((subject, payload, id, expectingLast))
    }

    /// Closes the connection (the process is stopping).
    func close() { connection.close() }
}
