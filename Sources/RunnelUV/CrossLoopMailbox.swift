/// Messages from one loop to another, sent as one batch a turn: `post` collects them on the
/// source loop, and at the end of that loop's turn (`LoopIO.atTurnEnd`) the batch goes onto
/// the target loop's queue as one item, so the target is woken at most once a turn by it (and
/// only when its queue was empty: `LoopScheduler`'s rule). The target runs `deliver` with the
/// batch, in the order posted. Each batch counts as one hand-off in the target's statistics.
///
/// Thread rules: `post` on the source loop's thread only; `deliver` runs on the target's.
/// Lifetime rule: made and held by a `LoopGroup`, one for each direction between its first
/// loop and each other loop; a batch queued on a loop that has shut down is dropped with it.
final class CrossLoopMailbox<Message>: TurnEndWork, @unchecked Sendable {
    /// A batch as it crosses: its messages are the target's from then on.
    private struct Batch: @unchecked Sendable {
        let messages: [Message]
    }

    /// The loop that posts (whose turn ends send the batches).
    let source: LoopScheduler
    private let target: LoopScheduler
    /// The target's statistics, which count the batches.
    private let targetStatistics: LoopStatistics
    private let deliver: @Sendable ([Message]) -> Void
    /// Posted this turn (source loop thread).
    private var pending: [Message] = []
    private var isAskedForTurnEnd = false

    init(
        from source: LoopScheduler, to target: LoopScheduler, counting targetStatistics: LoopStatistics,
        deliver: @escaping @Sendable ([Message]) -> Void
    ) {
        self.source = source
        self.target = target
        self.targetStatistics = targetStatistics
        self.deliver = deliver
    }

    /// Adds `message` to this turn's batch. Source loop thread.
    func post(_ message: Message) {
        source.assertOnLoopThread()
        pending.append(message)
        guard !isAskedForTurnEnd else { return }
        isAskedForTurnEnd = true
        source.io.atTurnEnd(self)
    }

    func turnEnded() {
        isAskedForTurnEnd = false
        guard !pending.isEmpty else { return }
        let batch = Batch(messages: pending)
        pending = []
        targetStatistics.handoffCount.add(1, ordering: .relaxed)
        let deliver = self.deliver
        target.execute { deliver(batch.messages) }
    }
}
