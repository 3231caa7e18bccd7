import Runnel

/// How long the stage evaluations of one publish may hold the loop (`max_publish_eval_ms`):
/// one value fanned out to thousands of subscriptions, each evaluating its own expression,
/// could otherwise stall every connection for seconds even when each connection stays within
/// its own `EvaluationBudget`.
///
/// `Publishing.publish` opens a window around the fan-out (`beginPublish`, `endPublish`: a
/// few stores, no clock). The steps its evaluations use are added up (an evaluation counts at
/// least `stepsPerEvaluation`, for the work around it), and the clock is read once every
/// `clockReadSteps` of them: the first reading sets the deadline. A publish whose evaluations
/// take fewer steps, nearly every one, never reads the clock (bench/README.md, "no clock per
/// publish"). Each connection keeps a `Tally` of its own steps in the publish.
///
/// Past the deadline, an evaluation is refused (its subscription ends with `eval` / "limit")
/// when its connection has spent at least the average of the connections that evaluated in
/// this publish: the connections that made the publish expensive lose their stage
/// subscriptions, and a cheap filter of someone else's, reached later in the fan-out, still
/// runs. Past half the bound again, every further evaluation is refused. So one publish holds
/// the loop for evaluations at most 1.5 times the bound, plus what was evaluated before the
/// first clock reading and since the last one (`clockReadSteps` each), plus one evaluation (at
/// most `max_eval_steps`). Evaluations outside a publish (timers, the replay a `sub` starts
/// with) are bounded by their connection's budget alone.
///
/// Loop thread only; one per server, shared by every session.
package final class PublishEvaluationBound {
    /// One connection's steps in the publish being fanned out (`EvaluationAccount` holds it).
    struct Tally {
        fileprivate var publish: UInt64 = 0
        fileprivate var steps = 0
    }

    /// The bound, in nanoseconds.
    private(set) var nanoseconds: Int64
    private var state = State.idle
    /// Steps counted since the clock was last read.
    private var stepsSinceClockRead = 0
    /// Which publish is fanning out: a tally of another is stale.
    private var publish: UInt64 = 0
    /// Steps counted in this publish, and how many connections they came from.
    private var publishSteps = 0
    private var connections = 0
    private let clock: any Scheduler

    /// Steps between two clock readings: at tens of nanoseconds a step, well under a millisecond.
    static let clockReadSteps = 10_000
    /// What an evaluation counts for at least, for the work around it (the chain's operators,
    /// the message it makes).
    static let stepsPerEvaluation = 16

    private enum State {
        /// No publish is fanning out.
        case idle
        /// A publish is fanning out; the clock has not been read in it yet.
        case opened
        /// Evaluations are running; the deadline, in the clock's nanoseconds.
        case running(deadline: Int64)
        /// The deadline passed: only connections that spent less than the average evaluate,
        /// until `last`.
        case passed(last: Int64)
        /// `last` passed too: the rest of the publish's evaluations are refused.
        case closed
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
    func beginPublish() {
        state = .opened
        publish &+= 1
        publishSteps = 0
        connections = 0
        stepsSinceClockRead = 0
    }

    /// The publish's fan-out is over.
    @inline(__always)
    func endPublish() { state = .idle }

    /// Whether an evaluation of the connection whose tally is `tally` may start: always
    /// outside a publish and within one until its deadline; past the deadline, while the
    /// connection has spent less than the average (see the type's comment).
    @inline(__always)
    func admits(_ tally: Tally) -> Bool {
        switch state {
        case .idle, .opened, .running: return true
        case .passed:
            let spent = tally.publish == publish ? tally.steps : 0
            return spent &* connections < publishSteps
        case .closed: return false
        }
    }

    /// Counts an evaluation of `steps` steps to `tally`; reads the clock when enough have
    /// added up.
    @inline(__always)
    func charge(_ steps: Int, to tally: inout Tally) {
        switch state {
        case .opened, .running, .passed: break
        case .idle, .closed: return
        }
        let counted = Swift.max(steps, Self.stepsPerEvaluation)
        if tally.publish != publish {
            tally = Tally(publish: publish, steps: 0)
            connections &+= 1
        }
        tally.steps &+= counted
        publishSteps &+= counted
        stepsSinceClockRead &+= counted
        guard stepsSinceClockRead >= Self.clockReadSteps else { return }
        stepsSinceClockRead = 0
        let now = clock.now.nanoseconds
        switch state {
        case .opened: state = .running(deadline: now &+ nanoseconds)
        case .running(let deadline) where now >= deadline: state = .passed(last: deadline &+ nanoseconds / 2)
        case .passed(let last) where now >= last: state = .closed
        default: break
        }
    }
}
