import RunnelProtocol

/// What one connection's stage evaluations are charged to: its own `EvaluationBudget` and the
/// server's `PublishEvaluationBound`. Every `StageExpression` of the connection's chains holds
/// it; before an evaluation starts it asks `admit`, after it ends (well or not) it `charge`s
/// the steps the evaluation's meter counted. An evaluation refused ends its subscription with
/// `eval` / "limit", the error a single evaluation over `max_eval_steps` gives, and is counted
/// in `stats` by which bound refused it.
///
/// An outcome shared through `Payload.memoized` is charged once, to the subscription that
/// computed it: the others did no work for it. A chain that several connections' subscriptions
/// share (`SharedStageChain`) has an account of its own that draws on one member's budgets at
/// a time, and moves to another member's when those refuse (`nextPayer`): it is refused only
/// when every member's are spent, so no member loses its subscription to another's spending.
///
/// Loop thread only (the class is `@unchecked Sendable` because the chains holding it are
/// `Sendable` values; they are subscribed and run on the loop). One per session and one per
/// shared chain, alive while their chains are.
final class EvaluationAccount: @unchecked Sendable {
    /// The connection's budget (for a shared chain's account, its current payer's).
    var connection: EvaluationBudget { budget.takeUnretainedValue() }
    /// `connection`, unretained and kept alive by `budgetOwner` (the budget itself, or the
    /// payer's account): the evaluation path reaches it without the retain and release that a
    /// class-typed `var` costs around every use.
    private var budget: Unmanaged<EvaluationBudget>
    private var budgetOwner: AnyObject
    /// The budget of the connection's token, shared by all its connections; nil without a
    /// configured token.
    var token: EvaluationBudget?
    /// For a shared chain's account: another member's account whose budgets admit an
    /// evaluation, asked for when the current payer's refuse; nil for a connection's own.
    var nextPayer: (() -> EvaluationAccount?)?
    /// The server's bound on one publish's evaluations.
    let publish: PublishEvaluationBound
    private let stats: ServerStats

    init(connection: EvaluationBudget, publish: PublishEvaluationBound, stats: ServerStats) {
        budget = Unmanaged.passUnretained(connection)
        budgetOwner = connection
        self.publish = publish
        self.stats = stats
    }

    /// A shared chain's account, drawing on `payer`'s budgets first.
    init(payingAs payer: EvaluationAccount) {
        budget = payer.budget
        budgetOwner = payer
        token = payer.token
        publish = payer.publish
        stats = payer.stats
    }

    /// Throws `eval` / "limit" for stage `stage` when the connection has no steps left or the
    /// publish being fanned out has passed its bound and this connection has spent its share of it.
    @inline(__always)
    func admit(stage: Int) throws(ProtocolError) {
        if !budgetsAdmit, !switchPayer() {
            if connection.admits() {
                stats.counts.evaluationsRefusedByTokenBudget &+= 1
            } else {
                stats.counts.evaluationsRefusedByConnectionBudget &+= 1
            }
            throw StageFailure.limit(stage: stage)
        }
        guard publish.admits(budget._withUnsafeGuaranteedRef { $0.publishTally }) else {
            stats.counts.evaluationsRefusedByPublishBound &+= 1
            throw StageFailure.limit(stage: stage)
        }
    }

    /// Whether the connection's budget and its token's have steps left.
    @inline(__always)
    var budgetsAdmit: Bool { budget._withUnsafeGuaranteedRef { $0.admits() } && (token?.admits() ?? true) }

    /// Moves a shared chain's account on to a member whose budgets admit; false when there is
    /// none (or this is a connection's own account).
    @inline(never)
    private func switchPayer() -> Bool {
        guard let payer = nextPayer?() else { return false }
        pay(as: payer)
        return true
    }

    /// Draws on `payer`'s budgets from now on (a shared chain's account).
    func pay(as payer: EvaluationAccount) {
        budgetOwner = payer
        budget = payer.budget
        token = payer.token
    }

    /// Whether evaluations are drawing on `account`'s budgets now.
    func isPaying(as account: EvaluationAccount) -> Bool {
        connection === account.connection && token === account.token
    }

    /// Charges the `steps` an admitted evaluation used.
    @inline(__always)
    func charge(_ steps: Int) {
        budget._withUnsafeGuaranteedRef { connection in
            connection.charge(steps)
            publish.charge(steps, to: &connection.publishTally)
        }
        token?.charge(steps)
    }
}
