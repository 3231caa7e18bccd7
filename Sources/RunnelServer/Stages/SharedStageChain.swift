import Runnel
import RunnelJSON
import RunnelProtocol

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
/// Built from the library's operators. Alone, a member's sink is subscribed to a chain
/// compiled for it and charged to its own connection, exactly a chain of its own (a fan-out
/// would only cost it a hop per value). The second member to join makes the fan-out: the
/// chain compiled again, charged to an account of its own (`EvaluationAccount`, which draws
/// on one member's budgets at a time), multicast through a plain `Subject` (ReactiveCocoa's
/// `multicast:`), to which the first member moves, between two values (the stages keep
/// nothing from one value to the next), and every later member joins. A terminal event (the
/// subject's, or an evaluation error) ends every member as it would have ended each chain of
/// its own; each member leaves as its subscription ends (`Session.forget` disposes it), and
/// the last to leave disposes the chain and takes it out of its entry.
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

    /// What identical chains share: the limits a chain was compiled under and its stage
    /// list's compact encoding, hashed once (a chain leaving its entry, which may hold
    /// thousands, costs no hashing of the text).
    struct Key: Hashable {
        let text: String
        private let hash: Int

        init(_ text: String) {
            self.text = text
            hash = text.hashValue
        }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
        static func == (lhs: Key, rhs: Key) -> Bool { lhs.hash == rhs.hash && lhs.text == rhs.text }
    }

    let key: Key
    /// Strong: the entry holds the chain only while it has members, and the last to leave
    /// takes it out. (A weak reference would move the entry's reference counts, taken on
    /// every publish, to a slow side table.)
    private let entry: SubjectEntry
    /// Where it counts itself and its members once fanned out.
    private let stats: ServerStats
    /// The members, in the order they joined (the order the fan-out delivers in).
    private var members: [Member] = []
    /// Once a second member has joined.
    private var fanOut: FanOut?

    /// One member subscription: its sink, whose budgets may pay, and what its sink is
    /// subscribed to (its own chain, or the fan-out).
    private final class Member: @unchecked Sendable {
        let sink: any Subscriber<Message>
        let payer: EvaluationAccount
        var subscription: Disposable?

        init(sink: any Subscriber<Message>, payer: EvaluationAccount) {
            self.sink = sink
            self.payer = payer
        }
    }

    /// The chain run once for every member: compiled with an account of its own, which draws
    /// on one member's budgets at a time, and multicast through `subject`.
    private struct FanOut {
        let subject: Subject<Message>
        let account: EvaluationAccount
        let connection: Disposable
    }

    /// The key `stages` share a chain under on `entry` when compiled under `limits`, when a
    /// subscription to it may share one (`from` is the subscription's resume position, if
    /// any); nil when it may not. The limits are part of the key: a reload that changes them
    /// applies to new subscriptions (checked and compiled under the new ones) and leaves
    /// running chains as they were made.
    static func key(for stages: [JSONValue], on entry: SubjectEntry, from: Position?, limits: StageLimits) -> Key? {
        guard !stages.isEmpty, entry.kind == .subject, from == nil,
            stages.allSatisfy({ stage in
                guard case .object(let members) = stage, case .string(let name)? = members["op"] else { return false }
                return shareableStages.contains(name)
            })
        else { return nil }
        let budget = limits.evalBudget
        return Key(
            "\(limits.maxStages),\(limits.maxBufferValues),\(limits.maxExprBytes),\(budget.maxSteps),\(budget.maxBytes) "
                + RawJSON(encoding: .array(stages)).description)
    }

    /// A chain on `entry` under `key`, with no member yet. Not in the entry's `sharedChains`
    /// until the caller puts it there. It keeps nothing of its stages but the key: each
    /// `entrance` is given the compiler of the joining member's own (identical) stages, so
    /// that a chain alone, like a chain of its own, holds no more than its subscription.
    init(key: Key, entry: SubjectEntry, stats: ServerStats) {
        self.key = key
        self.entry = entry
        self.stats = stats
    }

    /// What a new member whose connection's account is `payer` is to be subscribed to, made
    /// now, so that a compile error fails its `sub` before the reply; `compile` compiles the
    /// stages on the subject, charged to an account. For the first member, the chain
    /// compiled for it alone, charged to `payer`; for the second, the fan-out, which the
    /// first moves to (between two values: the stages keep nothing from one value to the
    /// next); after, the fan-out.
    func entrance(
        for payer: EvaluationAccount, compile: (EvaluationAccount) throws(ProtocolError) -> Signal<Message>
    ) throws(ProtocolError) -> Signal<Message> {
        if members.isEmpty { return try compile(payer) }
        if let fanOut { return fanOut.subject }
        let first = members[0]
        let account = EvaluationAccount(payingAs: first.payer)
        let chain = try compile(account)
        account.nextPayer = { [weak self] in self?.members.first { $0.payer.budgetsAdmit }?.payer }
        let subject = Subject<Message>(threading: .confined)
        first.subscription?.dispose()
        first.subscription = subject.subscribe(first.sink)
        fanOut = FanOut(subject: subject, account: account, connection: chain.subscribe(subject))
        stats.counts.sharedChains += 1
        stats.counts.sharedChainSubscriptions += 1
        return subject
    }

    /// Subscribes `sink` to `entrance` (this chain's, just made for `payer`) as a member whose
    /// connection's account is `payer`; disposing the result makes it leave (the last to
    /// leave disposes the chain).
    func join(_ sink: any Subscriber<Message>, payer: EvaluationAccount, through entrance: Signal<Message>)
        -> Disposable
    {
        let member = Member(sink: sink, payer: payer)
        members.append(member)
        if fanOut != nil { stats.counts.sharedChainSubscriptions += 1 }
        member.subscription = entrance.subscribe(sink)
        return Disposable { [self] in leave(member) }
    }

    /// How many member subscriptions it has.
    var memberCount: Int { members.count }

    /// Whether its members are served through the fan-out.
    var isFannedOut: Bool { fanOut != nil }

    private func leave(_ member: Member) {
        guard let index = members.firstIndex(where: { $0 === member }) else { return }
        members.remove(at: index)
        member.subscription?.dispose()
        if let fanOut {
            stats.counts.sharedChainSubscriptions -= 1
            if members.isEmpty {
                fanOut.connection.dispose()
                stats.counts.sharedChains -= 1
            } else if fanOut.account.isPaying(as: member.payer),
                !members.contains(where: { $0.payer === member.payer })
            {
                fanOut.account.pay(as: members[0].payer)
            }
        }
        if members.isEmpty {
            fanOut = nil
            if let index = entry.sharedChains.index(forKey: key), entry.sharedChains.values[index] === self {
                entry.sharedChains.remove(at: index)
            }
        }
    }
}
