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
    /// Closes the run its `OutboxRun` gathers apart into the batch, when it has one: before a
    /// message posted after the run, and before the batch goes.
    var closeRun: (() -> Message?)?

    /// An outbox of `loop`'s whose batches go to `send`, on the loop's thread.
    public init(loop: LoopScheduler, send: @escaping ([Message]) -> Void) {
        self.loop = loop
        self.send = send
    }

    /// Adds `message` to this turn's batch.
    public func post(_ message: Message) {
        loop.assertOnLoopThread()
        closeOpenRun()
        pending.append(message)
        askForTurnEnd()
    }

    /// Puts the open run, when there is one, at the batch's end.
    @inline(__always)
    private func closeOpenRun() {
        if let run = closeRun?() { pending.append(run) }
    }

    /// Has the batch sent at the turn's end, whatever it holds then.
    func askForTurnEnd() {
        guard !isAskedForTurnEnd else { return }
        isAskedForTurnEnd = true
        loop.io.atTurnEnd(self)
    }

    /// Adds to this turn's batch: to its last message in place when `extend` can (it returns
    /// true: several requests one can serve), else `message()`. (A run of elements gathers
    /// cheaper in an `OutboxRun`.)
    public func post(_ message: @autoclosure () -> Message, extendingLast extend: (inout Message) -> Bool) {
        loop.assertOnLoopThread()
        closeOpenRun()
        if pending.isEmpty || !extend(&pending[pending.count - 1]) { post(message()) }
    }

    /// Sends this turn's batch now (a stop that cannot wait for the turn's end).
    public func handOver() {
        loop.assertOnLoopThread()
        closeOpenRun()
        guard !pending.isEmpty else { return }
        let batch = pending
        // The next turn's batch is likely as long: no growing it value by value.
        pending = []
        pending.reserveCapacity(batch.count)
        send(batch)
    }

    public func turnEnded() {
        isAskedForTurnEnd = false
        handOver()
    }
}
