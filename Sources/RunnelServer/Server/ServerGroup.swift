import Logging
import Runnel
import RunnelUV
import Synchronization

/// What the servers of one process share, one server per event loop that serves sessions
/// (docs/decisions/0011-every-loop-serves-sessions-from-replicas.md): the connections admitted
/// against the process's limits (`admission`), the numbering of sessions, unique in the
/// process, and the way to sum every server's figures (`gatherFigures`). So no limit or figure
/// needs the first loop's help.
///
/// Thread rules: any thread; `gatherFigures` on the asking member's loop. Lifetime rule: made
/// before its servers, which hold it and join it; it holds them weakly. A member's loop must
/// run for as long as the member is in the group: a figure asked of a stopped loop never comes
/// back (the daemon stops every loop at once, after closing every connection).
package final class ServerGroup: Sendable {
    package let admission: ConnectionAdmission
    private let lastSessionID = Atomic<UInt64>(0)
    private let members = Locked<[WeakMember]>([])
    /// Each configured token's steps over every loop, by the token's digest, made when a
    /// connection of the token first authenticates.
    private let tokenPools = Locked<[[UInt8]: TokenStepPool]>([:])

    private struct WeakMember {
        weak var member: (any GroupMember)?
    }

    /// A group under `config`'s connection limits (a reload gives the admission new ones).
    package init(config: ServerConfig, logger: Logger) {
        admission = ConnectionAdmission(config: config, logger: logger)
    }

    /// A session number no other session of the process has had.
    func nextSessionID() -> UInt64 { lastSessionID.add(1, ordering: .relaxed).newValue }

    /// The pool of steps all connections of the token whose digest is `digest` share, on every
    /// loop (made with `config`'s `token_eval_steps_per_second` and `token_eval_steps_burst`
    /// and `clock` on first use).
    func tokenPool(for digest: [UInt8], config: ServerConfig, clock: any Scheduler) -> TokenStepPool {
        tokenPools.withLock { pools in
            if let pool = pools[digest] { return pool }
            let pool = TokenStepPool(
                stepsPerSecond: config.tokenEvalStepsPerSecond, burstSteps: config.tokenEvalStepsBurst, clock: clock)
            pools[digest] = pool
            return pool
        }
    }

    /// A reload: the pools of tokens still configured (`digests`) take `config`'s rate and
    /// burst; the others go (their connections are closed).
    func configureTokenPools(keeping digests: Set<[UInt8]>, config: ServerConfig) {
        let kept = tokenPools.withLock { pools in
            pools = pools.filter { digests.contains($0.key) }
            return Array(pools.values)
        }
        for pool in kept {
            pool.configure(stepsPerSecond: config.tokenEvalStepsPerSecond, burstSteps: config.tokenEvalStepsBurst)
        }
    }

    /// Adds `member` to the servers whose figures are summed. Returns the member that owns
    /// the subjects, the first to join, unless that is `member`.
    func join(_ member: any GroupMember) -> (any GroupMember)? {
        members.withLock { members in
            members.append(WeakMember(member: member))
            return members.first.flatMap(\.member).flatMap { $0 === member ? nil : $0 }
        }
    }

    /// Calls `then`, on `asking`'s loop, with every member's figures added up: `asking`'s read
    /// now, each other's read on its own loop and handed back (one hop there and one back: the
    /// counters stay plain fields of their loop, nothing is locked or atomic per delivery). At
    /// once when `asking` is the only member.
    func gatherFigures(askedBy asking: any GroupMember, then: @escaping (LoopFigures) -> Void) {
        let others = members.withLock { $0.compactMap(\.member) }.filter { $0 !== asking }
        let own = asking.loopFigures
        guard !others.isEmpty else { return then(own) }
        let gathering = LoopBound(
            FigureGathering(total: own, awaited: others.count, then: then), loop: asking.scheduler)
        for member in others {
            _ = member.scheduler.schedule {
                let figures = member.loopFigures
                _ = asking.scheduler.schedule { gathering.value.receive(figures) }
            }
        }
    }
}

/// A server of a group: asked for its figures on its own loop.
package protocol GroupMember: AnyObject, Sendable {
    var scheduler: LoopScheduler { get }
    /// The figures `stats` sums, read now. Loop thread.
    var loopFigures: LoopFigures { get }
    /// Where other members ask for replicas of its subjects.
    var replicaSource: ReplicaSource { get }
    /// Whether it shares its subjects with a cluster (fixed for its life). Any thread.
    var isClustered: Bool { get }
}

/// The figures gathered so far for one `gatherFigures`, and who waits for them. Thread rules:
/// the asking loop's thread (held in a `LoopBound`).
private final class FigureGathering {
    private var total: LoopFigures
    private var awaited: Int
    private let then: (LoopFigures) -> Void

    init(total: LoopFigures, awaited: Int, then: @escaping (LoopFigures) -> Void) {
        self.total = total
        self.awaited = awaited
        self.then = then
    }

    func receive(_ figures: LoopFigures) {
        total.add(figures)
        awaited -= 1
        if awaited == 0 { then(total) }
    }
}
