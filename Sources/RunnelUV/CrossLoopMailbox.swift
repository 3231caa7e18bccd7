/// Messages from one loop to another, sent as one batch a turn: `post` collects them on the
/// source loop, and at the end of that loop's turn (`LoopIO.atTurnEnd`) the batch goes to the
/// target loop's `LoopInbox`, so the target is woken at most once a turn by it (and only when
/// the inbox was empty). The target runs `deliver` with what it received, in the order
/// posted; each batch it receives counts as one hand-off in its statistics.
///
/// Thread rules: `post` on the source loop's thread only; `deliver` runs on the target's.
/// Lifetime rule: made and held by a `LoopGroup`, one for each direction between its first
/// loop and each other loop; a batch queued on a loop that has shut down is dropped with it.
final class CrossLoopMailbox<Message>: TurnEndWork, @unchecked Sendable {
    /// The loop that posts (whose turn ends send the batches).
    let source: LoopScheduler
    private let inbox: LoopInbox<Message>
    /// Posted this turn (source loop thread).
    private var pending: [Message] = []
    private var isAskedForTurnEnd = false

    init(
        from source: LoopScheduler, to target: LoopScheduler, counting targetStatistics: LoopStatistics,
        deliver: @escaping @Sendable ([Message]) -> Void
    ) {
        self.source = source
        inbox = LoopInbox(loop: target, counting: targetStatistics, receive: deliver)
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
        inbox.post(contentsOf: pending)
        pending.removeAll(keepingCapacity: true)
    }
}
