import RunnelUV

/// What a stage chain holds of this loop's replicas for as long as it exists, from its
/// compiling until it is let go, released then on the loop (`release`, run by `deinit`):
/// - the replica of a subject it names (`SubjectReplicas.reading`, a `pin`): a stage may
///   subscribe to the subject long after the chain was made (`concat`, once its own source
///   completes), and a replica let go meanwhile would miss what was published before it came
///   back;
/// - for a chain whose stages look subjects up as values arrive (`flattenMap`,
///   `switchToLatest`), the watch of every subject (`SubjectReplicas.holdWatch`), so the
///   replica of a subject a value names is here already, fed since before that value came, and
///   a value published into it right after is not missed (on the owner's loop the stage
///   subscribes as the value arrives).
///
/// Thread rules: made and let go on the replicas' loop, as the chains that hold it are.
/// Lifetime rule: the chain holds it (the signal `reading` returns, the stage lookup); it
/// holds `release`, and through it the replicas.
final class ReplicaHold: @unchecked Sendable {
    private let release: LoopBound<() -> Void>

    /// A hold that runs `release` on `loop` once let go.
    init(loop: LoopScheduler, release: @escaping () -> Void) { self.release = LoopBound(release, loop: loop) }

    deinit { release.value() }
}
