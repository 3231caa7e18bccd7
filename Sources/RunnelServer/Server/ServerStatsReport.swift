import RunnelCompression
import RunnelProtocol
import RunnelUV

/// What a `stats` reply reports (docs/protocol.md), read from the server at one moment: the
/// figures as a value a transport can read, and the one rule for writing them as members,
/// which the `stats` reply and the HTTP front door's `/stats` share.
///
/// Thread rules: made on the loop thread (`Server.gatherStatsReport`); a value after that.
/// Lifetime rule: owns its figures, holds nothing of the server.
package struct ServerStatsReport: Sendable {
    /// Every loop's counters and figures, added up, with the subjects'.
    let figures: LoopFigures
    /// Open connections of the process (`ConnectionAdmission`).
    let connections: Int
    let uptimeSeconds: Int
    /// The asking loop's turn lengths.
    let turns: TurnLengths
    /// How many event loops serve connections.
    let loops: Int
    /// The bytes zlib holds, the whole process's.
    let compressionMemoryBytes: Int

    /// `"connections":N,...`: the figures as members of `line`, in the protocol's order.
    package func writeMembers(into line: inout ServerLineWriter) {
        let counts = figures.counts
        let subjects = figures.subjects
        line.member("connections", integer: connections)
        line.member("subscriptions", integer: counts.subscriptions)
        line.member("subjects", integer: subjects?.count ?? 0)
        line.member("timers", integer: figures.timers)
        line.member("published", integer: counts.published)
        line.member("delivered", integer: counts.delivered)
        line.member("dropped", integer: counts.dropped)
        line.member("slow_consumer_disconnects", integer: counts.slowConsumerDisconnects)
        line.member("publish_pauses", integer: figures.publishPauses)
        line.member("publishers_paused", integer: figures.publishersPaused)
        line.member("publish_paused_ms", integer: Int((figures.publishPausedSeconds * 1000).rounded()))
        line.member("bytes_in", integer: counts.bytesIn)
        line.member("bytes_out", integer: counts.bytesOut)
        line.member("uptime_s", integer: uptimeSeconds)
        line.member("retained_bytes", integer: subjects?.retainedBytes ?? 0)
        line.member(
            "shared_chains",
            counts: ["chains": UInt64(counts.sharedChains), "subscriptions": UInt64(counts.sharedChainSubscriptions)])
        line.member(
            "eval_refused",
            counts: [
                "connection": counts.evaluationsRefusedByConnectionBudget,
                "token": counts.evaluationsRefusedByTokenBudget, "publish": counts.evaluationsRefusedByPublishBound,
            ])
        line.member(
            "loop",
            counts: [
                "turns": turns.turns, "turn_p50_us": turns.quantileMicroseconds(0.5),
                "turn_p99_us": turns.quantileMicroseconds(0.99), "turn_max_us": turns.longestNanoseconds / 1000,
            ])
        line.member("loops", integer: loops)
        line.member(
            "compression",
            counts: [
                "websockets": UInt64(figures.compressedWebSockets),
                "event_streams": UInt64(figures.compressedEventStreams),
                "memory_bytes": UInt64(compressionMemoryBytes),
            ])
        subjects?.cluster?.write(into: &line)
        if let journal = subjects?.journal {
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
