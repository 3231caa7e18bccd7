/// Messages from one loop to another, sent as one batch a turn: the source loop's
/// `LoopOutbox` collects them, and at the end of its turn the batch goes to the target loop's
/// `LoopInbox`, so the target is woken at most once a turn by it (and only when the inbox was
/// empty). The target runs `deliver` with what it received, in the order
/// posted; each batch it receives counts as one hand-off in its statistics.
///
/// Thread rules: `post` on the source loop's thread only; `deliver` runs on the target's.
/// Lifetime rule: made and held by a `LoopGroup`, one for each direction between its first
/// loop and each other loop; a batch queued on a loop that has shut down is dropped with it.
final class CrossLoopMailbox<Message>: @unchecked Sendable {
    /// The loop that posts (whose turn ends send the batches).
    var source: LoopScheduler { outbox.loop }
    private let outbox: LoopOutbox<Message>

    init(
        from source: LoopScheduler, to target: LoopScheduler, counting targetStatistics: LoopStatistics,
        deliver: @escaping @Sendable ([Message]) -> Void
    ) {
        let inbox = LoopInbox(loop: target, counting: targetStatistics, receive: deliver)
        outbox = LoopOutbox(loop: source) { batch in inbox.post(contentsOf: batch) }
    }

    /// Adds `message` to this turn's batch. Source loop thread.
    func post(_ message: Message) { outbox.post(message) }
}
