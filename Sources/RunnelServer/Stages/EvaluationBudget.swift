import Runnel

/// What one connection's stage evaluations may spend over time (`max_eval_steps_per_second`,
/// `max_eval_steps_burst`), as a token bucket of expression steps (`StepBucket`): every
/// evaluation takes the steps it used (`charge`), and time puts them back. An evaluation starts
/// only while the balance is above zero (`admits`), so the balance goes below zero by at most
/// the last evaluation's steps (`max_eval_steps`).
///
/// A token's budget on one loop (`drawing:`) is the same class with no refill of its own: its
/// steps come from the token's pool over every loop (`TokenStepPool`), a lease at a time,
/// shared by every connection of the token on the loop (see `EvaluationAccount`).
///
/// The clock is read only when the bucket stops being full (the refill counts from then) and
/// when it runs dry (to put back what the time since then earned); the pool is asked only when
/// a lease runs dry: an evaluation on a budget with steps left costs a compare and a subtract.
///
/// Thread rules: loop thread only. One per connection (`Session.evaluationAccount`), and one
/// per token and loop (`Server.tokenEvaluationBudget`).
final class EvaluationBudget {
    private var bucket: StepBucket
    /// For a token's budget: the pool it draws its steps from; nil for a connection's.
    private let pool: TokenStepPool?
    /// For a connection's budget: the connection's steps in the publish being fanned out
    /// (`PublishEvaluationBound`), kept with the budget so that a shared chain's account,
    /// drawing on its payer's budget, counts them to the payer's connection too.
    var publishTally = PublishEvaluationBound.Tally()
    /// The loop's scheduler (a `TestScheduler` in tests): its `now` is the bucket's clock.
    private let clock: any Scheduler

    /// A connection's budget, full.
    init(stepsPerSecond: Int, burstSteps: Int, clock: any Scheduler) {
        bucket = StepBucket(stepsPerSecond: stepsPerSecond, burstSteps: burstSteps, now: clock.now)
        pool = nil
        self.clock = clock
    }

    /// A token's budget on one loop: empty until its first evaluation draws a lease from `pool`.
    init(drawing pool: TokenStepPool, clock: any Scheduler) {
        // Never full, so spending never reads the clock; the pool counts the time.
        bucket = StepBucket(stepsPerSecond: 1, burstSteps: .max, now: clock.now)
        bucket.balance = 0
        self.pool = pool
        self.clock = clock
    }

    /// Steps left: below zero after an evaluation that overdrew it.
    var balance: Int { bucket.balance }

    /// Whether an evaluation may start now: steps are left, or the time since the last count
    /// has put some back (a token's: the pool has handed a new lease).
    @inline(__always)
    func admits() -> Bool {
        if bucket.balance > 0 { return true }
        refill()
        return bucket.balance > 0
    }

    /// Takes `steps` (>= 0) that an evaluation used. A token's budget that this overdrew
    /// settles with its pool at once (and takes the next lease, if any), so the token's other
    /// loops see the debt before their next lease.
    @inline(__always)
    func charge(_ steps: Int) {
        bucket.take(steps, clock: clock)
        if bucket.balance < 0, pool != nil { refill() }
    }

    /// Takes new settings (a reload). The balance keeps what was spent, within the new burst. A
    /// connection's only: a token's pool takes the token's.
    func configure(stepsPerSecond: Int, burstSteps: Int) {
        assert(pool == nil, "a token's settings go to its pool")
        bucket.configure(stepsPerSecond: stepsPerSecond, burstSteps: burstSteps, now: clock.now)
    }

    /// Puts back what the time earned; a token's budget settles with its pool and draws a lease.
    @inline(never)
    private func refill() {
        if let pool {
            bucket.balance = pool.draw(settling: bucket.balance)
        } else {
            bucket.refill(now: clock.now)
        }
    }
}
