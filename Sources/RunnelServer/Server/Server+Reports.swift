import RunnelCompression
import RunnelJSON
import RunnelProtocol

/// What `stats` and `list` report, read and written once for every front door that asks (the
/// line protocol's replies, the HTTP front door's `/stats` and `/subjects`). Loop thread only.
extension Server: GroupMember {
    /// Calls `then`, on this loop, with the `stats` reply's figures (see docs/protocol.md):
    /// every loop's counters and figures added up (`ServerGroup.gatherFigures`: at once when
    /// this server is its group's only one), with the process's connections and this loop's
    /// subjects, turns, journal and cluster.
    package func gatherStatsReport(then: @escaping (ServerStatsReport) -> Void) {
        scheduler.assertOnLoopThread()
        group.gatherFigures(askedBy: self) { [self] figures in
            then(
                ServerStatsReport(
                    figures: figures, connections: group.admission.openCount, subjects: subjects.count,
                    uptimeSeconds: uptimeSeconds, retainedBytes: subjects.retained.bytes, turns: scheduler.turnLengths,
                    loops: loopGroup?.count ?? 1, compressionMemoryBytes: ZlibMemory.bytes,
                    journal: subjects.journalStatistics, cluster: shared?.sharedFigures))
        }
    }

    /// This loop's figures, read now: what another loop's `gatherFigures` is handed.
    package var loopFigures: LoopFigures {
        scheduler.assertOnLoopThread()
        let compression = frontDoor?.compressionFigures
        return LoopFigures(
            counts: stats.counts, timers: scheduler.armedTimerCount, publishPauses: publisherPauses.pauses,
            publishersPaused: publisherPauses.pausedNow, publishPausedSeconds: publisherPauses.pausedSeconds,
            compressedWebSockets: compression?.webSockets ?? 0, compressedEventStreams: compression?.eventStreams ?? 0,
            connectionsByTransport: connectionCountsByTransport)
    }
}

extension JSONWriter {
    /// The `list` reply's `subjects` array: one object per entry.
    package mutating func writeSubjectList(_ entries: [SubjectEntry]) {
        append("[")
        for (index, entry) in entries.enumerated() {
            if index > 0 { append(",") }
            append("{\"subject\":")
            append(raw: entry.label.json)
            append(",\"kind\":")
            writeString(entry.kind.rawValue)
            if let capacity = entry.capacity {
                append(",\"capacity\":")
                writeInteger(capacity)
            }
            if let retainMilliseconds = entry.retainMilliseconds {
                append(entry.map == nil ? ",\"retain_s\":" : ",\"ttl_s\":")
                writeNumber(RetainAge.seconds(milliseconds: retainMilliseconds))
            }
            if let map = entry.map {
                append(",\"keys\":")
                writeInteger(map.count)
                append(",\"max_keys\":")
                writeInteger(map.maxKeys)
            }
            append(",\"subscribers\":")
            writeInteger(entry.namedSubscriptions)
            append(",\"published\":")
            writeInteger(entry.published)
            append(",\"pos\":")
            writeString(entry.position.description)
            append(entry.isDurable ? ",\"durable\":true" : ",\"durable\":false")
            append(entry.isTerminated ? ",\"terminated\":true}" : ",\"terminated\":false}")
        }
        append("]")
    }
}
