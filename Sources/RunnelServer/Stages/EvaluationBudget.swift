import Runnel

/// A token bucket of expression steps: what one connection's stage evaluations may spend over
/// time (`max_eval_steps_per_second`, `max_eval_steps_burst`). Full, it holds `burstSteps`;
/// every evaluation takes the steps it used (`charge`), and time puts back `stepsPerSecond`,
/// never past full. An evaluation starts only while the balance is above zero (`admits`), so
/// the balance goes below zero by at most the last evaluation's steps (`max_eval_steps`).
///
/// The clock is read only when the bucket stops being full (the refill counts from then) and
/// when it runs dry (to put back what the time since then earned): an evaluation on a bucket
/// with steps left costs a compare and a subtract.
///
/// Loop thread only. One per connection (`Session.evaluationBudget`); a per-token one would be
/// the same class, shared by every connection of the token (see `EvaluationAccount`).
final class EvaluationBudget {
    /// Steps put back per second.
    private(set) var stepsPerSecond: Int
    /// Steps held when full.
    private(set) var burstSteps: Int
    /// Steps left: at most `burstSteps`; below zero after an evaluation that overdrew it.
    private(set) var balance: Int
    /// When the steps put back were last counted; meaningful while the bucket is not full.
    private var refilledAt: SchedulerTime
    /// For a connection's budget: the connection's steps in the publish being fanned out
    /// (`PublishEvaluationBound`), kept with the budget so that a shared chain's account,
    /// drawing on its payer's budget, counts them to the payer's connection too.
    var publishTally = PublishEvaluationBound.Tally()
    /// The loop's scheduler (a `TestScheduler` in tests): its `now` is the bucket's clock.
    private let clock: any Scheduler

    init(stepsPerSecond: Int, burstSteps: Int, clock: any Scheduler) {
        precondition(stepsPerSecond > 0 && burstSteps > 0, "an evaluation budget needs a positive rate and burst")
        self.stepsPerSecond = stepsPerSecond
        self.burstSteps = burstSteps
        self.balance = burstSteps
        self.refilledAt = clock.now
        self.clock = clock
    }

    /// Whether an evaluation may start now: steps are left, or the time since the last count
    /// has put some back.
    @inline(__always)
    func admits() -> Bool {
        if balance > 0 { return true }
        refill()
        return balance > 0
    }

    /// Takes `steps` (>= 0) that an evaluation used.
    @inline(__always)
    func charge(_ steps: Int) {
        // Leaving full: the time it sat full earned nothing, the refill counts from now.
        if balance >= burstSteps { refilledAt = clock.now }
        balance &-= steps
    }

    /// Takes new settings (a reload). The balance keeps what was spent, within the new burst.
    func configure(stepsPerSecond: Int, burstSteps: Int) {
        precondition(stepsPerSecond > 0 && burstSteps > 0, "an evaluation budget needs a positive rate and burst")
        refill()
        self.stepsPerSecond = stepsPerSecond
        self.burstSteps = burstSteps
        balance = Swift.min(balance, burstSteps)
    }

    /// Puts back what the time since `refilledAt` earned, up to full.
    private func refill() {
        let now = clock.now
        let earned = Double(now.nanoseconds &- refilledAt.nanoseconds) * Double(stepsPerSecond) / 1e9
        // Less than a step: wait, rather than lose the fraction by moving `refilledAt`.
        guard earned >= 1 else { return }
        let room = Double(burstSteps - balance)
        balance = earned >= room ? burstSteps : balance + Int(earned)
        refilledAt = now
    }
}
