import Runnel

/// How long the stage evaluations of one publish may hold the loop (`max_publish_eval_ms`),
/// whoever's subscriptions they are: one value fanned out to thousands of subscriptions, each
/// evaluating its own expression, could otherwise stall every connection for seconds even
/// when each connection stays within its own `EvaluationBudget`.
///
/// The subject store opens a window around each value's fan-out (`beginPublish`,
/// `endPublish`: a store each, no clock), as it publishes or, for a durable subject, once the
/// value is on disk. The first evaluation in it reads the clock and sets the deadline;
/// from then on the steps evaluations use are added up and the clock is read again every
/// `clockReadSteps` of them (an evaluation counts at least `stepsPerEvaluation`, for the work
/// around it). Once the deadline has passed, every further evaluation of that publish is
/// refused, and its subscription ends with `eval` / "limit": so one publish holds the loop for
/// evaluations at most the bound, plus what was evaluated since the last clock reading, plus
/// one evaluation (at most `max_eval_steps`). Evaluations outside a publish (timers, the
/// replay a `sub` starts with) are bounded by their connection's budget alone.
///
/// Loop thread only; one per server, shared by every session.
final class PublishEvaluationBound {
    /// The bound, in nanoseconds.
    private(set) var nanoseconds: Int64
    private var state = State.idle
    /// Steps counted since the clock was last read.
    private var stepsSinceClockRead = 0
    private let clock: any Scheduler

    /// Steps between two clock readings: at tens of nanoseconds a step, well under a millisecond.
    static let clockReadSteps = 10_000
    /// What an evaluation counts for at least, for the work around it (the chain's operators,
    /// the message it makes).
    static let stepsPerEvaluation = 16

    private enum State {
        /// No publish is fanning out.
        case idle
        /// A publish began; nothing was evaluated yet.
        case opened
        /// Evaluations are running; the deadline, in the clock's nanoseconds.
        case running(deadline: Int64)
        /// The deadline passed: the rest of the publish's evaluations are refused.
        case passed
    }

    init(milliseconds: Int, clock: any Scheduler) {
        self.nanoseconds = Int64(milliseconds) * 1_000_000
        self.clock = clock
    }

    /// Takes a new bound (a reload); a publish in progress keeps its deadline.
    func configure(milliseconds: Int) {
        nanoseconds = Int64(milliseconds) * 1_000_000
    }

    /// A publish starts fanning out.
    @inline(__always)
    func beginPublish() { state = .opened }

    /// The publish's fan-out is over.
    @inline(__always)
    func endPublish() { state = .idle }

    /// Whether an evaluation may start: always outside a publish, and within one until its
    /// deadline has passed.
    @inline(__always)
    func admits() -> Bool {
        switch state {
        case .idle, .running: return true
        case .opened:
            state = .running(deadline: clock.now.nanoseconds &+ nanoseconds)
            stepsSinceClockRead = 0
            return true
        case .passed: return false
        }
    }

    /// Counts an evaluation of `steps` steps; reads the clock when enough have added up.
    @inline(__always)
    func charge(_ steps: Int) {
        guard case .running(let deadline) = state else { return }
        stepsSinceClockRead &+= Swift.max(steps, Self.stepsPerEvaluation)
        guard stepsSinceClockRead >= Self.clockReadSteps else { return }
        stepsSinceClockRead = 0
        if clock.now.nanoseconds >= deadline { state = .passed }
    }
}
