/// The one way a loop hands messages off to another thread (another loop's `LoopInbox`, a
/// serial queue of its own that may block): `post` collects them on the loop, and at the end
/// of the turn (`LoopIO.atTurnEnd`, before the loop writes its own sockets) `send` gets the
/// turn's messages as one batch, in the order posted, to hand over with one call.
///
/// Thread rules: `post`, `handOver` and `send` on the loop's thread. Lifetime rule: holds
/// `send`; the loop's turn-end list holds it while a batch waits.
public final class LoopOutbox<Message>: TurnEndWork, @unchecked Sendable {
    public let loop: LoopScheduler
    private let send: ([Message]) -> Void
    /// Posted this turn.
    private var pending: [Message] = []
    private var isAskedForTurnEnd = false

    /// An outbox of `loop`'s whose batches go to `send`, on the loop's thread.
    public init(loop: LoopScheduler, send: @escaping ([Message]) -> Void) {
        self.loop = loop
        self.send = send
    }

    /// Adds `message` to this turn's batch.
    public func post(_ message: Message) {
        loop.assertOnLoopThread()
        pending.append(message)
        guard !isAskedForTurnEnd else { return }
        isAskedForTurnEnd = true
        loop.io.atTurnEnd(self)
    }

    /// Adds `message` to this turn's batch, or puts what `merge` makes of it and the batch's
    /// last message in that one's place (several requests that one can serve).
    public func post(_ message: Message, merging merge: (_ last: Message, _ new: Message) -> Message?) {
        if let last = pending.last, let merged = merge(last, message) {
            pending[pending.count - 1] = merged
        } else {
            post(message)
        }
    }

    /// Sends this turn's batch now (a stop that cannot wait for the turn's end).
    public func handOver() {
        loop.assertOnLoopThread()
        guard !pending.isEmpty else { return }
        let batch = pending
        pending = []
        send(batch)
    }

    func turnEnded() {
        isAskedForTurnEnd = false
        handOver()
    }
}
