import RunnelCompression
import RunnelJSON
import RunnelProtocol

/// What `stats` and `list` report, read and written once for every front door that asks (the
/// line protocol's replies, the HTTP front door's `/stats` and `/subjects`). Loop thread only.
extension Server {
    /// The `stats` reply's figures, as they are now (see docs/protocol.md).
    package var statsReport: ServerStatsReport {
        let turns = scheduler.turnLengths
        return ServerStatsReport(
            connections: group.admission.openCount, subscriptions: stats.subscriptions, subjects: subjects.count,
            timers: scheduler.armedTimerCount, published: stats.published, delivered: stats.delivered,
            dropped: stats.dropped, slowConsumerDisconnects: stats.slowConsumerDisconnects,
            publishPauses: publisherPauses.pauses, publishersPaused: publisherPauses.pausedNow,
            publishPausedMilliseconds: Int((publisherPauses.pausedSeconds * 1000).rounded()), bytesIn: stats.bytesIn,
            bytesOut: stats.bytesOut, uptimeSeconds: uptimeSeconds, retainedBytes: subjects.retained.bytes,
            sharedChains: stats.sharedChains, sharedChainSubscriptions: stats.sharedChainSubscriptions,
            evaluationsRefusedByConnectionBudget: stats.evaluationsRefusedByConnectionBudget,
            evaluationsRefusedByTokenBudget: stats.evaluationsRefusedByTokenBudget,
            evaluationsRefusedByPublishBound: stats.evaluationsRefusedByPublishBound, loopTurns: turns.turns,
            turnP50Microseconds: turns.quantileMicroseconds(0.5), turnP99Microseconds: turns.quantileMicroseconds(0.99),
            turnMaxMicroseconds: turns.longestNanoseconds / 1000, loops: loopGroup?.count ?? 1,
            compression: compressionFigures, journal: subjects.journalStatistics, cluster: shared?.sharedFigures)
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

extension Server {
    /// The compressed streams open now and zlib's memory (none of either without a front door).
    var compressionFigures: CompressionFigures {
        frontDoor?.compressionFigures
            ?? CompressionFigures(webSockets: 0, eventStreams: 0, memoryBytes: ZlibMemory.bytes)
    }
}
