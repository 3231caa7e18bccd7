import Runnel

/// One token's budget of steps over every loop of the process (`token_eval_steps_per_second`,
/// `token_eval_steps_burst`): each loop's `EvaluationBudget` for the token draws its steps from
/// here a lease at a time (`draw`), so the loops share the token's rate and no evaluation takes
/// the lock. A loop's overdraw is settled as it happens, so the token's connections together
/// spend what one bucket allows, give or take the leases the loops hold unspent.
///
/// Thread rules: any thread; its lock is taken once a lease. Lifetime rule: the server group
/// holds it while the token is configured (`ServerGroup.tokenPool`).
final class TokenStepPool: Sendable {
    private let bucket: Locked<StepBucket>
    /// The loops' clock (`CLOCK_MONOTONIC`, read from any thread), or a virtual one in tests.
    private let clock: any Scheduler

    init(stepsPerSecond: Int, burstSteps: Int, clock: any Scheduler) {
        bucket = Locked(StepBucket(stepsPerSecond: stepsPerSecond, burstSteps: burstSteps, now: clock.now))
        self.clock = clock
    }

    /// What a loop's budget holds after settling with the pool what it had left (`balance`, at
    /// most zero: below after an overdraw): a lease (a 64th of the burst, at least a step) when
    /// the pool has steps left once the balance is settled; else zero, and the loop waits.
    func draw(settling balance: Int) -> Int {
        assert(balance <= 0, "a budget draws once it has spent its lease")
        return bucket.withLock { bucket in
            bucket.refill(now: clock.now)
            bucket.balance &+= balance
            guard bucket.balance > 0 else { return 0 }
            let lease = Swift.min(bucket.balance, Swift.max(1, bucket.burstSteps / 64))
            bucket.take(lease, clock: clock)
            return lease
        }
    }

    /// Takes new settings (a reload).
    func configure(stepsPerSecond: Int, burstSteps: Int) {
        bucket.withLock { $0.configure(stepsPerSecond: stepsPerSecond, burstSteps: burstSteps, now: clock.now) }
    }
}
