import RunnelUV
import Synchronization

/// What cnats's threads hand a clustered node's loop: messages of its subscriptions and of its
/// streams' consumers, JetStream's answers to its publishes, the link going down or coming
/// back, and cnats's errors, in the order they were posted.
enum ClusterDelivery: Sendable {
    case message(NATSMessage)
    case stream(NATSStreamMessage)
    case published(id: String, error: String?)
    case link(up: Bool)
    case error(String, dropped: Bool)
}

/// The hand-off from cnats's threads to the loop: one lock-protected queue, and one job on
/// the loop's scheduler only when the queue goes from empty to non-empty, so a burst of
/// messages costs one wake-up and is drained as a batch (the h2o and uWebSockets pattern).
///
/// Thread rules: `post` from any thread; `drain` runs on the loop thread (scheduled by `post`).
/// Lifetime rule: holds `receive` until the process ends; the link that made it stops posting
/// when its connection closes.
final class ClusterInbox: Sendable {
    private let queue = Mutex<[ClusterDelivery]>([])
    private let scheduler: LoopScheduler
    private let receive: @Sendable ([ClusterDelivery]) -> Void

    init(scheduler: LoopScheduler, receive: @escaping @Sendable ([ClusterDelivery]) -> Void) {
        self.scheduler = scheduler
        self.receive = receive
    }

    func post(_ delivery: ClusterDelivery) {
        let wasEmpty = queue.withLock { queue in
            queue.append(delivery)
            return queue.count == 1
        }
        if wasEmpty { _ = scheduler.schedule { [self] in drain() } }
    }

    private func drain() {
        let batch = queue.withLock { queue in
            let batch = queue
            queue.removeAll(keepingCapacity: true)
            return batch
        }
        receive(batch)
    }
}
