import Dispatch
import RunnelBytes
import RunnelUV

/// How a clustered node sends retained values to JetStream: on a NATS connection of its own,
/// from a serial queue of its own. No `write` runs on a loop (it may block): a turn's publishes
/// cross to the queue as one batch (`LoopOutbox`). A batch sent while nothing else is in flight
/// is written at once (`flush`), so a lone acknowledged `pub` does not wait for cnats's flusher,
/// which waits 1 ms for more before it writes; batches sent behind others in flight are left to
/// the flusher, which writes them together: one `write`, and one read for nats-server, for many
/// publishes (bench/README.md, "Acknowledged retained publishes", for what that saves).
///
/// Every publish is answered, exactly, and the values reach each stream in the order published:
/// - One JetStream has not answered within `ackWait` is sent again with the same
///   `Nats-Msg-Id`, which JetStream stores once, until an answer comes: stored (as a duplicate
///   too, with its seq) or refused. Only past the stream's duplicate window (`resendWithin`),
///   when a copy sent again could be stored twice, does it stop and say the outcome is unknown.
/// - A link cut loses what was in flight from some point on, never a value before one it
///   kept: while the connection is down new publishes wait (it buffers nothing), and once it
///   has come back (`NATSConnection.link(readingInto:)`, looked at before every send) every unanswered
///   publish is sent again, in the order first sent, before anything new.
///
/// Thread rules: `publish` on the loop thread; the rest on `queue` (cnats's answers cross to
/// it). Lifetime rule: made with the link, and lives as long.
final class ClusterRetainedPublisher: @unchecked Sendable {
    private let connection: NATSConnection
    /// What this loop turn publishes, handed to `runneld.cluster.publish` as one batch.
    private let outbox: LoopOutbox<Publish>
    private let inFlight: InFlight

    /// How long JetStream has to answer a publish before it is sent again.
    static let ackWait: Duration = .seconds(2)
    /// How long the queue waits for nats-server to read a lone batch (`NATSConnection.flush`).
    static let flushWait: Duration = .seconds(1)

    init(
        connection: NATSConnection, scheduler: LoopScheduler,
        published: @escaping @Sendable (_ id: String, _ answer: NATSPublishAnswer) -> Void
    ) throws(NATSError) {
        self.connection = connection
        let inFlight = try InFlight(connection: connection, published: published)
        inFlight.jetStream = try connection.jetStream(
            wait: ClusterLink.jetStreamWait,
            handlers: NATSJetStreamHandlers(
                message: { _ in },
                published: { id, answer in inFlight.queue.async { inFlight.answered(id, answer) } }))
        self.inFlight = inFlight
        outbox = LoopOutbox(loop: scheduler) { publishes in
            inFlight.queue.async { inFlight.send(batch: publishes) }
        }
    }

    /// Publishes `payload` on `subject` as `id` (its `Nats-Msg-Id`), only over the subject's
    /// value with seq `expectingLast` when given, sending it again while unanswered for at most
    /// `resendWithin` (within the stream's duplicate window); JetStream's answer, or the reason
    /// it was not sent, goes to `published` with `id`.
    func publish(
        _ payload: ByteBuffer, on subject: String, id: String, expectingLast: UInt64? = nil, resendWithin: Duration
    ) {
        outbox.post(
            Publish(
                subject: subject, payload: payload, id: id, expectingLast: expectingLast, resendWithin: resendWithin))
    }

    /// Closes the connection (the process is stopping).
    func close() { connection.close() }

    private struct Publish: Sendable {
        let subject: String
        let payload: ByteBuffer
        let id: String
        let expectingLast: UInt64?
        let resendWithin: Duration
        let since = ContinuousClock.now
    }

    /// The publishes sent and not answered yet, by id, numbered in the order first sent, with
    /// their copies in flight. Thread rules: `queue` only.
    private final class InFlight: @unchecked Sendable {
        let queue = DispatchQueue(label: "runneld.cluster.publish")
        var jetStream: NATSJetStream?
        private let connection: NATSConnection
        private let published: @Sendable (String, NATSPublishAnswer) -> Void
        private var waiting: [String: (publish: Publish, number: UInt64, copies: Int)] = [:]
        private var sent: UInt64 = 0
        /// New publishes held while the connection is lost, in order.
        private var held: [Publish] = []
        private var returnsSeen: UInt64 = 0
        private let statistics: NATSStatistics

        init(
            connection: NATSConnection, published: @escaping @Sendable (String, NATSPublishAnswer) -> Void
        ) throws(NATSError) {
            self.connection = connection
            self.published = published
            statistics = try NATSStatistics()
        }

        /// Sends a loop turn's publishes; written at once when nothing else was in flight, else
        /// by cnats's flusher with whatever follows within its millisecond. A flush that fails
        /// or times out loses nothing: what it did not write stays buffered, and an unanswered
        /// publish is sent again (`answered`).
        func send(batch publishes: [Publish]) {
            let alone = waiting.isEmpty
            for publish in publishes { send(publish) }
            guard alone, !waiting.isEmpty else { return }
            try? connection.flush(timeout: ClusterRetainedPublisher.flushWait)
        }

        /// Sends a new publish, after what the connection may have lost; holds it while the
        /// connection is lost. One the connection does not take was not sent, and is answered so.
        func send(_ publish: Publish) {
            guard isUp() else {
                held.append(publish)
                if held.count == 1 { sendHeldWhenBack() }
                return
            }
            sent += 1
            guard transmit(publish) else { return published(publish.id, .failed("the link to NATS is down")) }
            waiting[publish.id] = (publish, sent, 1)
        }

        /// Whether the connection is up, having sent again, after it came back, what it may
        /// have lost.
        private func isUp() -> Bool {
            let link = connection.link(readingInto: statistics)
            if link.returns != returnsSeen {
                returnsSeen = link.returns
                for (publish, _, _) in waiting.values.sorted(by: { $0.number < $1.number }) { resend(publish) }
            }
            return link.isUp
        }

        /// Sends the held publishes, in order, once the connection is back.
        private func sendHeldWhenBack() {
            guard isUp() else {
                return queue.asyncAfter(deadline: .now() + .milliseconds(50)) { [self] in sendHeldWhenBack() }
            }
            let publishes = held
            held = []
            for publish in publishes { send(publish) }
        }

        /// JetStream answered `id`, or did not in time (`timedOut`): sent again while that may
        /// still give an exact answer.
        func answered(_ id: String, _ answer: NATSPublishAnswer) {
            guard let publish = waiting[id]?.publish else { return }
            guard answer == .timedOut else {
                waiting[id] = nil
                return published(id, answer)
            }
            // One copy given up; another still in flight may yet be answered.
            waiting[id]!.copies -= 1
            guard waiting[id]!.copies <= 0 else { return }
            guard ContinuousClock.now - publish.since + ClusterRetainedPublisher.ackWait < publish.resendWithin else {
                waiting[id] = nil
                return published(id, .failed("JetStream did not answer in time; the value may have been stored"))
            }
            guard isUp() else { return resendWhenUp(id) }
            resend(publish)
        }

        /// Looks again shortly whether the connection is back: its return sends every
        /// unanswered publish again (`isUp`), `id`'s among them.
        private func resendWhenUp(_ id: String) {
            queue.asyncAfter(deadline: .now() + .milliseconds(200)) { [self] in
                guard let (publish, _, copies) = waiting[id] else { return }
                guard isUp() else { return resendWhenUp(id) }
                if copies <= 0 { resend(publish) }
            }
        }

        /// Sends an unanswered publish again; while the connection takes none, tries again in a
        /// second (the copy sent before may have been stored: it is not answered yet).
        private func resend(_ publish: Publish) {
            waiting[publish.id]!.copies += 1
            guard !transmit(publish) else { return }
            queue.asyncAfter(deadline: .now() + .seconds(1)) { [self] in answered(publish.id, .timedOut) }
        }

        private func transmit(_ publish: Publish) -> Bool {
            do throws(NATSError) {
                try withExtendedLifetime(publish.payload) { () throws(NATSError) in
                    try jetStream!.publish(
                        publish.subject, payload: publish.payload.bytes, id: publish.id,
                        expectingLast: publish.expectingLast, wait: ClusterRetainedPublisher.ackWait)
                }
                return true
            } catch {
                return false
            }
        }
    }
}
