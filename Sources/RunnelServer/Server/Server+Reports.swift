import RunnelCompression
import RunnelJSON
import RunnelProtocol

/// What `stats` and `list` report, read once for every front door that asks (the line
/// protocol's replies, the HTTP front door's `/stats`, `/metrics` and `/subjects`). Loop
/// thread only.
extension Server: GroupMember {
    /// Calls `then`, on this loop, with the `stats` reply's figures (see docs/protocol.md):
    /// every loop's counters and figures added up (`ServerGroup.gatherFigures`: at once when
    /// this server is its group's only one), the subjects' from the loop that owns them, with
    /// the process's connections and this loop's turns.
    package func gatherStatsReport(then: @escaping (ServerStatsReport) -> Void) {
        scheduler.assertOnLoopThread()
        group.gatherFigures(askedBy: self) { [self] figures in
            then(
                ServerStatsReport(
                    figures: figures, connections: group.admission.openCount, uptimeSeconds: uptimeSeconds,
                    turns: scheduler.turnLengths, loops: loopGroup?.count ?? 1,
                    compressionMemoryBytes: ZlibMemory.bytes))
        }
    }

    /// Calls `then`, on this loop, with the subjects `list` gives `grant` under `prefix`
    /// (`SubjectListing.list`): read here on the loop that owns the subjects, else listed by the
    /// owner (`ForwardedRequest.list`), which counts every loop's subscriptions.
    package func listSubjects(prefix: String, for grant: TokenGrant, then: @escaping ([SubjectListing]) -> Void) {
        scheduler.assertOnLoopThread()
        guard let replicas else { return then(SubjectListing.list(of: subjects, prefix: prefix, for: grant)) }
        replicas.forward(.list(prefix: prefix, grant: grant)) { outcome, _ in
            guard case .subjects(let listings) = outcome else {
                preconditionFailure("the owner answers list with its subjects")
            }
            then(listings)
        }
    }

    /// Calls `then`, on this loop, with whether the subject `name` has ended right at `position`
    /// (`SubjectEntry.hasEnded(at:)`): read here, or on a loop that does not own the subjects,
    /// from its replica here, asked of the owner when there is none (false when the owner
    /// gives none). At once unless the owner is asked.
    package func subjectHasEnded(_ name: String, at position: Position, then: @escaping (Bool) -> Void) {
        scheduler.assertOnLoopThread()
        guard let replicas else { return then(subjects[name]?.hasEnded(at: position) ?? false) }
        if let held = replicas[name] { return then(held.hasEnded(at: position)) }
        // Let go at the turn's end, unless the stream that asks subscribes to it meanwhile.
        replicas.open(name) { answer in then((try? answer.get())?.hasEnded(at: position) ?? false) }
    }

    /// This loop's figures, read now: what another loop's `gatherFigures` is handed.
    package var loopFigures: LoopFigures {
        scheduler.assertOnLoopThread()
        let compression = frontDoor?.compressionFigures
        return LoopFigures(
            counts: stats.counts, timers: scheduler.armedTimerCount, publishPauses: publisherPauses.pauses,
            publishersPaused: publisherPauses.pausedNow, publishPausedSeconds: publisherPauses.pausedSeconds,
            compressedWebSockets: compression?.webSockets ?? 0, compressedEventStreams: compression?.eventStreams ?? 0,
            connectionsByTransport: connectionCountsByTransport, subjects: subjectFigures)
    }

    /// The subjects' figures, on the loop that owns them (`replicas` is nil there).
    private var subjectFigures: SubjectFigures? {
        guard replicas == nil else { return nil }
        return SubjectFigures(
            count: subjects.count, retainedBytes: subjects.retained.bytes, journal: subjects.journalStatistics,
            cluster: shared?.sharedFigures)
    }
}
