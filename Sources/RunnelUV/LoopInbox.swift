import Runnel

/// The one way messages reach a loop from other threads (other loops, cnats's threads, the
/// journal's writer): a locked queue, and one job on the loop's scheduler only when the queue
/// goes from empty to non-empty, so a burst costs one wake-up and is received as one batch,
/// in the order posted (the h2o and uWebSockets pattern). The scheduler's own queue wakes the
/// loop the same way (`LoopScheduler.post`).
///
/// Thread rules: `post` from any thread; `receive` runs on the loop's thread, one batch a
/// call. Lifetime rule: holds `receive` for its own life; a batch queued on a loop that has
/// shut down is dropped with the loop's queue.
public final class LoopInbox<Message>: @unchecked Sendable {
    private let queue = Locked<[Message]>([])
    private let loop: LoopScheduler
    private let receive: @Sendable ([Message]) -> Void
    /// Counts each batch received (a `LoopGroup` loop's hand-offs); nil: not counted.
    private let statistics: LoopStatistics?

    /// An inbox of `loop`'s whose batches go to `receive`, each counted in `statistics`.
    public convenience init(loop: LoopScheduler, receive: @escaping @Sendable ([Message]) -> Void) {
        self.init(loop: loop, counting: nil, receive: receive)
    }

    init(loop: LoopScheduler, counting statistics: LoopStatistics?, receive: @escaping @Sendable ([Message]) -> Void) {
        self.loop = loop
        self.statistics = statistics
        self.receive = receive
    }

    /// Queues `message`. Any thread.
    public func post(_ message: Message) {
        let wasEmpty = queue.withLock { queue in
            queue.append(message)
            return queue.count == 1
        }
        if wasEmpty { scheduleDrain() }
    }

    /// Queues `messages`, in order. Any thread.
    public func post(contentsOf messages: [Message]) {
        guard !messages.isEmpty else { return }
        let wasEmpty = queue.withLock { queue in
            guard queue.isEmpty else {
                queue.append(contentsOf: messages)
                return false
            }
            queue = messages  // taken whole: no message copied
            return true
        }
        if wasEmpty { scheduleDrain() }
    }

    private func scheduleDrain() {
        loop.post { [self] in drain() }
    }

    private func drain() {
        let batch = queue.withLock { queue in
            var batch: [Message] = []
            swap(&batch, &queue)
            return batch
        }
        statistics?.handoffCount.add(1, ordering: .relaxed)
        receive(batch)
    }
}
