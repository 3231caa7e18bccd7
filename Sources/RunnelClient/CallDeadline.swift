/// When a call gives up: its op (for the message), its timeout and the instant it ends, and a
/// timer that fails what still waits then.
///
/// Thread rules: a value, `Sendable`. Lifetime rule: none (a value); a timer lives until it
/// fires or its call cancels it.
struct CallDeadline: Sendable {
    let op: String
    let timeout: Duration
    let instant: ContinuousClock.Instant

    init(op: String, timeout: Duration) {
        self.op = op
        self.timeout = timeout
        instant = .now + timeout
    }

    var hasPassed: Bool { ContinuousClock.now >= instant }

    /// The `timeout` a call past its deadline throws; `connected` says whether it was waiting for
    /// the reply or for the connection.
    func passed(connected: Bool) -> RunnelError {
        let waiting = connected ? "no answer" : "no connection (the client is reconnecting)"
        return RunnelError(code: "timeout", message: "\(op): \(waiting) within \(timeout.secondsText) s")
    }

    /// Runs `expire` once the instant has passed, unless the task returned is cancelled first.
    func whenPassed(_ expire: @escaping @Sendable () -> Void) -> Task<Void, Never> {
        let instant = instant
        return Task {
            guard (try? await Task.sleep(until: instant, clock: .continuous)) != nil else { return }
            expire()
        }
    }
}
