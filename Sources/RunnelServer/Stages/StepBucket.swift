import Runnel

/// A token bucket of expression steps, as a value: full, it holds `burstSteps`; spending takes
/// steps (`take`), and time puts back `stepsPerSecond`, never past full (`refill`). The one rule
/// of a budget of steps: a connection's (`EvaluationBudget`, on its loop) and a token's over
/// every loop (`TokenStepPool`, under its lock) keep one each.
///
/// Thread rules: a value; its owner's. Lifetime rule: holds nothing.
struct StepBucket {
    /// Steps put back per second.
    private(set) var stepsPerSecond: Int
    /// Steps held when full.
    private(set) var burstSteps: Int
    /// Steps left: at most `burstSteps`; below zero after spending past it.
    var balance: Int
    /// When the steps put back were last counted; meaningful while the bucket is not full.
    private var refilledAt: SchedulerTime

    init(stepsPerSecond: Int, burstSteps: Int, now: SchedulerTime) {
        precondition(stepsPerSecond > 0 && burstSteps > 0, "a budget of steps needs a positive rate and burst")
        self.stepsPerSecond = stepsPerSecond
        self.burstSteps = burstSteps
        balance = burstSteps
        refilledAt = now
    }

    /// Takes `steps` (>= 0). Leaving full, the refill counts from now (the time it sat full
    /// earned nothing): `clock` is read then only.
    @inline(__always)
    mutating func take(_ steps: Int, clock: any Scheduler) {
        if balance >= burstSteps { refilledAt = clock.now }
        balance &-= steps
    }

    /// Puts back what the time since the last count earned, up to full.
    mutating func refill(now: SchedulerTime) {
        let earned = Double(now.nanoseconds &- refilledAt.nanoseconds) * Double(stepsPerSecond) / 1e9
        // Less than a step: wait, rather than lose the fraction by moving `refilledAt`.
        guard earned >= 1 else { return }
        let room = Double(burstSteps - balance)
        balance = earned >= room ? burstSteps : balance + Int(earned)
        refilledAt = now
    }

    /// Takes new settings (a reload), after counting what the old rate earned. The balance
    /// keeps what was spent, within the new burst.
    mutating func configure(stepsPerSecond: Int, burstSteps: Int, now: SchedulerTime) {
        precondition(stepsPerSecond > 0 && burstSteps > 0, "a budget of steps needs a positive rate and burst")
        refill(now: now)
        self.stepsPerSecond = stepsPerSecond
        self.burstSteps = burstSteps
        balance = Swift.min(balance, burstSteps)
    }
}
