/// What one connection's stage evaluations are charged to: its own `EvaluationBudget` and the
/// server's `PublishEvaluationBound`. Every `StageExpression` of the connection's chains holds
/// it; before an evaluation starts it asks `admit`, after it ends (well or not) it `charge`s
/// the steps the evaluation's meter counted. An evaluation refused ends its subscription with
/// `eval` / "limit", the error a single evaluation over `max_eval_steps` gives, and is counted
/// in `stats` by which bound refused it.
///
/// An outcome shared through `Payload.memoized` is charged once, to the subscription that
/// computed it: the others did no work for it.
///
/// Loop thread only (the class is `@unchecked Sendable` because the chains holding it are
/// `Sendable` values; they are subscribed and run on the loop). One per session, alive while
/// its chains are.
final class EvaluationAccount: @unchecked Sendable {
    /// The connection's budget.
    let connection: EvaluationBudget
    /// The budget of the connection's token, shared by all its connections; nil without a
    /// configured token.
    var token: EvaluationBudget?
    /// The server's bound on one publish's evaluations.
    let publish: PublishEvaluationBound
    private let stats: ServerStats
    /// The connection's steps in the publish being fanned out.
    private var publishTally = PublishEvaluationBound.Tally()

    init(connection: EvaluationBudget, publish: PublishEvaluationBound, stats: ServerStats) {
        self.connection = connection
        self.publish = publish
        self.stats = stats
    }

    /// Throws `eval` / "limit" for stage `stage` when the connection has no steps left or the
    /// publish being fanned out has passed its bound and this connection has spent its share of it.
    @inline(__always)
    func admit(stage: Int) throws(ProtocolError) {
        guard connection.admits() else {
            stats.evaluationsRefusedByConnectionBudget &+= 1
            throw StageFailure.limit(stage: stage)
        }
        if let token, !token.admits() {
            stats.evaluationsRefusedByTokenBudget &+= 1
            throw StageFailure.limit(stage: stage)
        }
        guard publish.admits(publishTally) else {
            stats.evaluationsRefusedByPublishBound &+= 1
            throw StageFailure.limit(stage: stage)
        }
    }

    /// Charges the `steps` an admitted evaluation used.
    @inline(__always)
    func charge(_ steps: Int) {
        connection.charge(steps)
        token?.charge(steps)
        publish.charge(steps, to: &publishTally)
    }
}
