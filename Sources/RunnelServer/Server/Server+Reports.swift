import RunnelJSON

/// What `stats` and `list` report, written once for every front door that asks (the line
/// protocol's replies, the HTTP front door's `/stats` and `/subjects`). Loop thread only.
extension Server {
    /// The `stats` reply's members: `"connections":N,...` (see docs/protocol.md).
    func writeStatsMembers(into line: inout ServerLineWriter) {
        line.member("connections", integer: connectionCount)
        line.member("subscriptions", integer: stats.subscriptions)
        line.member("subjects", integer: subjects.count)
        line.member("timers", integer: scheduler.armedTimerCount)
        line.member("published", integer: stats.published)
        line.member("delivered", integer: stats.delivered)
        line.member("dropped", integer: stats.dropped)
        line.member("slow_consumer_disconnects", integer: stats.slowConsumerDisconnects)
        line.member("publish_pauses", integer: publisherPauses.pauses)
        line.member("publishers_paused", integer: publisherPauses.pausedNow)
        line.member("publish_paused_ms", integer: Int((publisherPauses.pausedSeconds * 1000).rounded()))
        line.member("bytes_in", integer: stats.bytesIn)
        line.member("bytes_out", integer: stats.bytesOut)
        line.member("uptime_s", integer: uptimeSeconds)
        line.member("retained_bytes", integer: subjects.retained.bytes)
        line.member(
            "shared_chains",
            counts: [
                "chains": UInt64(stats.sharedChains), "subscriptions": UInt64(stats.sharedChainSubscriptions),
            ])
        line.member(
            "eval_refused",
            counts: [
                "connection": stats.evaluationsRefusedByConnectionBudget,
                "token": stats.evaluationsRefusedByTokenBudget, "publish": stats.evaluationsRefusedByPublishBound,
            ])
        let turns = scheduler.turnLengths
        line.member(
            "loop",
            counts: [
                "turns": turns.turns, "turn_p50_us": turns.quantileMicroseconds(0.5),
                "turn_p99_us": turns.quantileMicroseconds(0.99), "turn_max_us": turns.longestNanoseconds / 1000,
            ])
        if let journal = subjects.journalStatistics {
            line.member("durable") { json in
                json.append("{\"queue\":")
                json.writeInteger(journal.queued)
                json.append(",\"batches\":")
                json.writeInteger(journal.batches)
                json.append(",\"commit_us\":")
                json.writeInteger(journal.lastCommitMicroseconds)
                json.append(",\"bytes\":")
                json.writeInteger(journal.bytesOnDisk)
                json.append(journal.failing ? ",\"failing\":true}" : ",\"failing\":false}")
            }
        }
    }
}

extension JSONWriter {
    /// The `list` reply's `subjects` array: one object per entry.
    mutating func writeSubjectList(_ entries: [SubjectEntry]) {
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
