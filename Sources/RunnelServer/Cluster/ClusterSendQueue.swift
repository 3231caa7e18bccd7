import Dispatch
import Logging
import RunnelBytes
import RunnelUV
import Synchronization

/// What a node tells NATS on its link's connection, handed off the loop: cnats writes the socket
/// itself, under its connection's lock, when its buffer is full, so a publish (or a subscription
/// made or ended) on a loop could hold that loop until NATS reads. The loop posts to this
/// turn's batch (a value by reference, no copy; `LoopOutbox`), which at the turn's end goes to a
/// serial queue of the link's own, where the calls run in order: a subscription before the
/// flush that a `sub` reply waits for, a value after the subscription made before it. The
/// values of one subject that follow each other in a batch leave as one message
/// (`ClusterValueBatch`).
///
/// Bounded: the bytes handed over and not yet taken by cnats are at most `limit`
/// (`cluster_send_buffer_bytes`). A value that would pass it is not sent: counted (`dropped`,
/// `runnel_cluster_values_dropped_total`), and its sequence number is spent all the same, so
/// every node that wanted it sees the gap and tells its subscribers `dropped` (`ClusterLink`).
/// The nodes' own messages (interest, heartbeats) are small and always queued.
///
/// Thread rules: `send`, `sendControl`, `subscribe`, `unsubscribe`, `flush` and the figures on
/// the loop thread; the calls into cnats, and `subscriptions`, on `queue`; `queuedBytes`,
/// `sentCount` and `refusedCount` are atomics both sides use. Lifetime rule: made with the
/// link; a batch holds its values until they are published.
final class ClusterSendQueue: @unchecked Sendable {
    /// One publish: a plain value (its NATS subject, its reply subject's prefix and sequence,
    /// and the value's buffer), or a node's own message.
    private enum Item {
        case value(subject: [CChar], replyPrefix: [UInt8], seq: UInt64, value: ByteBuffer)
        case control(subject: String, reply: String, payload: [UInt8])
        /// A NATS subscription to `natsSubject` for the runneld subject or pattern `key`, made
        /// or ended.
        case subscribe(natsSubject: String, key: String)
        case unsubscribe(key: String)
        /// Waits until NATS has read everything before it, then runs each of `then`.
        case flush(then: [@Sendable () -> Void])
    }

    private let connection: NATSConnection
    private let queue = DispatchQueue(label: "runneld.cluster.send")
    private let logger: Logger
    let limit: Int
    /// The NATS subscriptions made, by runneld subject or pattern (`queue` only).
    private var subscriptions: [String: NATSSubscription] = [:]
    /// Where a batch of values is framed (`queue` only), kept between batches.
    private var batchPayload: [UInt8] = []
    private let scheduler: LoopScheduler
    /// This turn's publishes, handed to `queue` as one batch.
    private lazy var outbox = LoopOutbox<Item>(loop: scheduler) { [unowned self] items in
        queue.async { [self] in publish(items) }
    }
    /// Value bytes handed to `queue` and not yet taken by cnats, this turn's batch included.
    private let queuedBytes = Atomic<Int>(0)
    private let sentCount = Atomic<UInt64>(0)
    private let refusedCount = Atomic<UInt64>(0)
    /// Values not sent because the queue was full (loop thread).
    private(set) var overflowed: UInt64 = 0

    init(connection: NATSConnection, scheduler: LoopScheduler, limit: Int, logger: Logger) {
        self.connection = connection
        self.scheduler = scheduler
        self.limit = limit
        self.logger = logger
    }

    /// Values published (taken by cnats).
    var sent: UInt64 { sentCount.load(ordering: .relaxed) }
    /// Values not sent: the queue full, or cnats refusing them (its connection closed, or its
    /// reconnect buffer full while the link is down).
    var dropped: UInt64 { overflowed &+ refusedCount.load(ordering: .relaxed) }

    /// Queues `value`, the `seq`th of its route, unless the queue holds `limit` bytes with it:
    /// false then, and nothing is queued.
    func send(_ value: ByteBuffer, route: ClusterRoute, seq: UInt64) -> Bool {
        let size = value.count
        guard queuedBytes.load(ordering: .relaxed) &+ size <= limit else {
            overflowed &+= 1
            return false
        }
        queuedBytes.add(size, ordering: .relaxed)
        append(.value(subject: route.subject, replyPrefix: route.replyPrefix, seq: seq, value: value))
        return true
    }

    /// Queues a node's own message (interest, heartbeat), whatever the queue holds.
    func sendControl(_ payload: [UInt8], subject: String, reply: String) {
        append(.control(subject: subject, reply: reply, payload: payload))
    }

    /// Subscribes in NATS to `natsSubject` for `key` (a runneld subject or pattern), whose
    /// values then reach the link's receiver; a failure (the connection closed) is logged.
    func subscribe(_ natsSubject: String, for key: String) { append(.subscribe(natsSubject: natsSubject, key: key)) }

    /// Ends the NATS subscription `subscribe` made for `key`.
    func unsubscribe(_ key: String) { append(.unsubscribe(key: key)) }

    /// Runs `then`, on the loop, once NATS has read everything queued before this call (a
    /// subscription a `sub` reply waits for). Flushes asked for in one turn share one.
    func flush(then: @escaping @Sendable () -> Void) {
        outbox.post(.flush(then: [then])) { last in
            guard case .flush(let waiting) = last else { return false }
            last = .flush(then: waiting + [then])
            return true
        }
    }

    /// Hands this turn's batch over and waits, at most `timeout`, until every publish queued
    /// has run (the process is stopping: the node's goodbye goes out before the connection
    /// closes). Loop thread.
    func drain(within timeout: Duration) {
        outbox.handOver()
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        _ = done.wait(timeout: .now() + .milliseconds(Int(timeout.components.seconds) * 1000))
    }

    private func append(_ item: Item) { outbox.post(item) }

    /// A turn's batch, in order, on `queue`. The values of one subject that follow each other
    /// in it, consecutive in their sequence, go as one message (`ClusterValueBatch`) of at most
    /// its limit, or what the NATS server takes if that is less.
    private func publish(_ items: [Item]) {
        let limit = min(ClusterValueBatch.limit, connection.maxPayload)
        var index = items.startIndex
        while index < items.endIndex {
            guard case .value(let subject, let replyPrefix, let first, let value) = items[index] else {
                publish(items[index])
                index += 1
                continue
            }
            var end = index + 1
            var bytes = ClusterValueBatch.frameHeader + value.count
            while end < items.endIndex, case .value(let next, let nextPrefix, let seq, let nextValue) = items[end],
                seq == first + UInt64(end - index), next == subject, nextPrefix == replyPrefix,
                bytes + ClusterValueBatch.frameHeader + nextValue.count <= limit
            {
                bytes += ClusterValueBatch.frameHeader + nextValue.count
                end += 1
            }
            if end == index + 1 {
                publish(items[index])
            } else {
                batchPayload.removeAll(keepingCapacity: true)
                for case .value(_, _, _, let framed) in items[index..<end] {
                    ClusterValueBatch.appendFrame(framed.bytes, to: &batchPayload)
                }
                batchPayload.withUnsafeBytes { payload in
                    publishValues(
                        end - index, subject: subject, replyPrefix: replyPrefix, first: first, payload: payload)
                }
                queuedBytes.subtract(bytes - (end - index) * ClusterValueBatch.frameHeader, ordering: .relaxed)
            }
            index = end
        }
    }

    /// One message of `count` values from the `first`th (on `queue`): its reply subject,
    /// `INSTANCE.EPOCH.SEQ` or `INSTANCE.EPOCH.FIRST-COUNT`, made on the stack.
    private func publishValues(
        _ count: Int, subject: [CChar], replyPrefix: [UInt8], first: UInt64, payload: UnsafeRawBufferPointer
    ) {
        let token = ClusterValueBatch.token(first: first, count: count)
        let sentIt = withUnsafeTemporaryAllocation(
            of: CChar.self, capacity: replyPrefix.count + token.utf8.count + 1
        ) { reply in
            var end = 0
            for byte in replyPrefix {
                reply[end] = CChar(bitPattern: byte)
                end += 1
            }
            for byte in token.utf8 {
                reply[end] = CChar(bitPattern: byte)
                end += 1
            }
            reply[end] = 0
            return subject.withUnsafeBufferPointer { subject in
                (try? connection.publish(subject.baseAddress!, reply: reply.baseAddress, payload: payload)) != nil
            }
        }
        if sentIt {
            sentCount.add(UInt64(count), ordering: .relaxed)
        } else {
            refusedCount.add(UInt64(count), ordering: .relaxed)
        }
    }

    /// One publish, on `queue`: where cnats may wait for the socket.
    private func publish(_ item: Item) {
        switch item {
        case .value(let subject, let replyPrefix, let seq, let value):
            publishValues(1, subject: subject, replyPrefix: replyPrefix, first: seq, payload: value.bytes)
            queuedBytes.subtract(value.count, ordering: .relaxed)
        case .control(let subject, let reply, let payload):
            payload.withUnsafeBytes { bytes in try? connection.publish(subject, reply: reply, payload: bytes) }
        case .subscribe(let natsSubject, let key):
            do {
                subscriptions[key] = try connection.subscribe(natsSubject)
            } catch {
                logger.error("cluster: cannot subscribe", metadata: ["subject": "\(key)", "error": "\(error)"])
            }
        case .unsubscribe(let key):
            subscriptions.removeValue(forKey: key)?.unsubscribe()
        case .flush(let then):
            try? connection.flush(timeout: ClusterLink.jetStreamWait)
            for job in then { scheduler.schedule(job) }
        }
    }
}
