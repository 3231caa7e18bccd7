import Runnel

/// One stage chain on one subject, subscribed to the subject once and shared by every
/// subscription of that subject with the same stages: its expressions run once per value
/// however many subscriptions there are, and every member writes the same output payload (a
/// computed value is encoded once, by the first line that writes it).
///
/// Only a chain that would deliver each member exactly what a chain of its own would is
/// shared (`key(for:on:from:limits:)`): every stage's output for a value depends on that value
/// alone (`shareableStages`), on a plain subject (kind `subject`), without `from`, compiled
/// under the same limits. A replay or behavior subject replays values to each new
/// subscription, which a chain already running cannot give it; a stage with state (`scan`,
/// `take`, `distinctUntilChanged`, the time stages...) starts that state at subscription.
///
/// Built from the library's operators. One member's sink is subscribed to the compiled chain
/// straight, as a chain of its own would be (a fan-out would only cost it a hop per value).
/// The second member to join makes the fan-out: a plain `Subject` (ReactiveCocoa's
/// `multicast:`) subscribed to the chain, to which the first member moves, between two
/// values (the stages keep nothing from one value to the next), and every later member
/// joins. A terminal event (the subject's, or an evaluation error) ends every member as it
/// would have ended each chain of its own; each member leaves as its subscription ends
/// (`Session.forget` disposes it), and the last to leave disposes the chain and takes it out
/// of its entry, so a later subscription starts a new one.
///
/// Its evaluations are charged to `account`, which draws on one member's budgets at a time
/// and moves on to another member's when those refuse (`EvaluationAccount.nextPayer`).
///
/// Loop thread only. Held by its entry's `sharedChains` while it has members, and by its
/// members' disposables.
final class SharedStageChain: @unchecked Sendable {
    /// The stages that pass each value on, or not, by the value alone: a member that joins
    /// late sees from then on what a chain of its own would have shown it. (`and`, `or` and
    /// `not` keep only the label of the value they are reading, for its result.)
    static let shareableStages: Set<String> = [
        "filter", "map", "mapReplace", "reduceEach", "ignore", "ignoreValues", "not", "and", "or",
    ]

    /// The limits it was compiled under and its stage list's compact encoding: what identical
    /// chains share.
    let key: String
    /// Strong: the entry holds the chain only while it has members, and the last to leave
    /// takes it out. (A weak reference would move the entry's reference counts, taken on
    /// every publish, to a slow side table.)
    private let entry: SubjectEntry
    /// What every evaluation of the chain is charged to.
    let account: EvaluationAccount
    /// Where it counts itself and its members once fanned out.
    private let stats: ServerStats
    /// The compiled chain, on the subject.
    private let chain: Signal<Message>
    /// The members, in the order they joined (the order the fan-out delivers in).
    private var members: [Member] = []
    /// Once a second member has joined: the subject every member's sink is subscribed to,
    /// and its subscription to the chain.
    private var fanOut: (subject: Subject<Message>, connection: Disposable)?

    /// One member subscription: its sink, whose budgets may pay, and what its sink is
    /// subscribed to (the chain, or the fan-out).
    private final class Member: @unchecked Sendable {
        let sink: any Subscriber<Message>
        let payer: EvaluationAccount
        var subscription: Disposable?

        init(sink: any Subscriber<Message>, payer: EvaluationAccount) {
            self.sink = sink
            self.payer = payer
        }
    }

    /// The key `stages` share a chain under on `entry` when compiled under `limits`, when a
    /// subscription to it may share one (`from` is the subscription's resume position, if
    /// any); nil when it may not. The limits are part of the key: a reload that changes them
    /// applies to new subscriptions (checked and compiled under the new ones) and leaves
    /// running chains as they were made.
    static func key(for stages: [JSONValue], on entry: SubjectEntry, from: Position?, limits: StageLimits) -> String? {
        guard !stages.isEmpty, entry.kind == .subject, from == nil,
            stages.allSatisfy({ stage in
                guard case .object(let members) = stage, case .string(let name)? = members["op"] else { return false }
                return shareableStages.contains(name)
            })
        else { return nil }
        let budget = limits.evalBudget
        return
            "\(limits.maxStages),\(limits.maxBufferValues),\(limits.maxExprBytes),\(budget.maxSteps),\(budget.maxBytes) "
            + RawJSON(encoding: .array(stages)).description
    }

    /// A chain on `entry` under `key`, `compile`d with an account that draws first on
    /// `creator`'s budgets. Not in the entry's `sharedChains` until the caller puts it there.
    init(
        key: String, entry: SubjectEntry, creator: EvaluationAccount, stats: ServerStats,
        compile: (EvaluationAccount) throws(ProtocolError) -> Signal<Message>
    ) throws(ProtocolError) {
        self.key = key
        self.entry = entry
        self.stats = stats
        account = EvaluationAccount(payingAs: creator)
        chain = try compile(account)
        account.nextPayer = { [weak self] in self?.members.first { $0.payer.budgetsAdmit }?.payer }
    }

    /// Subscribes `sink` to the chain for a member whose connection's account is `payer`;
    /// disposing the result makes it leave (the last to leave disposes the chain).
    func join(_ sink: any Subscriber<Message>, payer: EvaluationAccount) -> Disposable {
        let member = Member(sink: sink, payer: payer)
        members.append(member)
        if members.count == 1 {
            member.subscription = chain.subscribe(sink)
        } else {
            member.subscription = fanningOut().subscribe(sink)
            stats.sharedChainSubscriptions += 1
        }
        return Disposable { [self] in leave(member) }
    }

    /// How many member subscriptions it has.
    var memberCount: Int { members.count }

    /// Whether its members are served through the fan-out.
    var isFannedOut: Bool { fanOut != nil }

    /// The fan-out, made when the second member joins: the first member moves to it.
    private func fanningOut() -> Subject<Message> {
        if let fanOut { return fanOut.subject }
        let subject = Subject<Message>()
        let first = members[0]
        first.subscription?.dispose()
        first.subscription = subject.subscribe(first.sink)
        fanOut = (subject, chain.subscribe(subject))
        stats.sharedChains += 1
        stats.sharedChainSubscriptions += 1
        return subject
    }

    private func leave(_ member: Member) {
        guard let index = members.firstIndex(where: { $0 === member }) else { return }
        members.remove(at: index)
        member.subscription?.dispose()
        if fanOut != nil { stats.sharedChainSubscriptions -= 1 }
        if members.isEmpty {
            if let fanOut {
                fanOut.connection.dispose()
                stats.sharedChains -= 1
            }
            fanOut = nil
            if entry.sharedChains[key] === self { entry.sharedChains[key] = nil }
        } else if account.isPaying(as: member.payer), !members.contains(where: { $0.payer === member.payer }) {
            account.pay(as: members[0].payer)
        }
    }
}
