import Dispatch

/// Where a loop's blocking calls run (a library call that waits for a server's answer): a
/// serial queue of its own, one call after another, whose answers come back to the loop
/// through its queue (`LoopScheduler.post`). The one shape for "off the loop, then back":
/// `run(_:then:)`.
///
/// Thread rules: `run` from the loop's thread (or any); `work` on the worker's queue, `then`
/// on the loop's thread. Lifetime rule: a job holds what its closures capture until `then`
/// has run; a job whose loop has shut down drops its answer.
public final class LoopWorker: Sendable {
    public let loop: LoopScheduler
    private let queue: DispatchQueue

    /// A worker for `loop`, its queue named `label` (seen in a debugger and in crash reports).
    public init(loop: LoopScheduler, label: String) {
        self.loop = loop
        queue = DispatchQueue(label: label)
    }

    /// Runs `work` on the worker's queue, then `then` with its answer on the loop's thread.
    public func run<Answer: Sendable>(
        _ work: @escaping @Sendable () -> Answer, then: @escaping @Sendable (Answer) -> Void
    ) {
        let loop = self.loop
        queue.async {
            let answer = work()
            loop.post { then(answer) }
        }
    }

    /// Runs `work` on the worker's queue; nothing comes back.
    public func run(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }
}
