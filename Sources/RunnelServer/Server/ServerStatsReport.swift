import RunnelCompression
import RunnelProtocol

/// What a `stats` reply reports (docs/protocol.md), read from the server at one moment: the
/// figures as a value a transport can read, and the one rule for writing them as members,
/// which the `stats` reply and the HTTP front door's `/stats` share.
///
/// Thread rules: made on the loop thread (`Server.statsReport`); a value after that. Lifetime
/// rule: owns its figures, holds nothing of the server.
package struct ServerStatsReport {
    let connections: Int
    let subscriptions: Int
    let subjects: Int
    let timers: Int
    let published: UInt64
    let delivered: UInt64
    let dropped: UInt64
    let slowConsumerDisconnects: UInt64
    let publishPauses: UInt64
    let publishersPaused: Int
    let publishPausedMilliseconds: Int
    let bytesIn: UInt64
    let bytesOut: UInt64
    let uptimeSeconds: Int
    let retainedBytes: Int
    let sharedChains: Int
    let sharedChainSubscriptions: Int
    let evaluationsRefusedByConnectionBudget: UInt64
    let evaluationsRefusedByTokenBudget: UInt64
    let evaluationsRefusedByPublishBound: UInt64
    let loopTurns: UInt64
    let turnP50Microseconds: UInt64
    let turnP99Microseconds: UInt64
    let turnMaxMicroseconds: UInt64
    /// How many event loops serve connections.
    let loops: Int
    /// Compressed streams and zlib's memory.
    let compression: CompressionFigures
    /// The durable journal's figures; nil without one (no `durable` member).
    let journal: JournalStatistics?
    /// A clustered node's figures; nil standalone (no `cluster` member).
    let cluster: (any SharedFigures)?

    /// `"connections":N,...`: the figures as members of `line`, in the protocol's order.
    package func writeMembers(into line: inout ServerLineWriter) {
        line.member("connections", integer: connections)
        line.member("subscriptions", integer: subscriptions)
        line.member("subjects", integer: subjects)
        line.member("timers", integer: timers)
        line.member("published", integer: published)
        line.member("delivered", integer: delivered)
        line.member("dropped", integer: dropped)
        line.member("slow_consumer_disconnects", integer: slowConsumerDisconnects)
        line.member("publish_pauses", integer: publishPauses)
        line.member("publishers_paused", integer: publishersPaused)
        line.member("publish_paused_ms", integer: publishPausedMilliseconds)
        line.member("bytes_in", integer: bytesIn)
        line.member("bytes_out", integer: bytesOut)
        line.member("uptime_s", integer: uptimeSeconds)
        line.member("retained_bytes", integer: retainedBytes)
        line.member(
            "shared_chains",
            counts: ["chains": UInt64(sharedChains), "subscriptions": UInt64(sharedChainSubscriptions)])
        line.member(
            "eval_refused",
            counts: [
                "connection": evaluationsRefusedByConnectionBudget, "token": evaluationsRefusedByTokenBudget,
                "publish": evaluationsRefusedByPublishBound,
            ])
        line.member(
            "loop",
            counts: [
                "turns": loopTurns, "turn_p50_us": turnP50Microseconds, "turn_p99_us": turnP99Microseconds,
                "turn_max_us": turnMaxMicroseconds,
            ])
        line.member("loops", integer: loops)
        line.member(
            "compression",
            counts: [
                "websockets": UInt64(compression.webSockets), "event_streams": UInt64(compression.eventStreams),
                "memory_bytes": UInt64(compression.memoryBytes),
            ])
        cluster?.write(into: &line)
        if let journal {
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
