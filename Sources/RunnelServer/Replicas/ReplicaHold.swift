import RunnelProtocol
import RunnelUV

/// Holds a replica here (`SubjectReplicas.pin`) for as long as a stage chain that names its
/// subject exists, from the chain's compiling until the chain is let go (`SubjectReplicas.reading`
/// hands its signal one): a stage may subscribe to the subject long after the chain was made
/// (`concat`, once its own source completes), and a replica let go meanwhile would miss what
/// was published before it came back.
///
/// Thread rules: made and let go on the replicas' loop, as the chains that hold it are.
/// Lifetime rule: the signal `reading` returns holds it; it holds the replica's entry and the
/// replicas.
final class ReplicaHold: @unchecked Sendable {
    private let held: LoopBound<(replicas: SubjectReplicas, entry: SubjectEntry)>

    init(_ entry: SubjectEntry, in replicas: SubjectReplicas, loop: LoopScheduler) {
        replicas.pin(entry)
        held = LoopBound((replicas, entry), loop: loop)
    }

    deinit {
        let (replicas, entry) = held.value
        replicas.unpin(entry)
    }
}

/// Holds a pattern watched here (`SubjectReplicas.holdWatch`) for as long as the stage chain
/// that holds it exists: a chain whose stages look subjects up as values arrive (`flattenMap`,
/// `switchToLatest`) holds the watch of every subject, so the replica of a subject a value
/// names is here already, fed since before that value came, and a value published into it
/// right after is not missed (on the owner's loop the stage subscribes as the value arrives).
///
/// Thread rules and lifetime rule: as `ReplicaHold`'s, the pattern for the entry.
final class ReplicaWatchHold: @unchecked Sendable {
    private let held: LoopBound<(replicas: SubjectReplicas, pattern: SubjectPattern)>

    init(_ pattern: SubjectPattern, in replicas: SubjectReplicas, loop: LoopScheduler) {
        held = LoopBound((replicas, pattern), loop: loop)
    }

    deinit {
        let (replicas, pattern) = held.value
        replicas.releaseWatch(of: pattern)
    }
}
