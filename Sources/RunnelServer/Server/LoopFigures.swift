/// What one loop's server counts that `stats` and `/metrics` add up over the process's loops
/// (`ServerGroup.gatherFigures`): its counters, its armed timers, its paused publishers, its
/// compressed streams and its connections by transport.
///
/// Thread rules: a value, read on its loop (`Server.loopFigures`) and handed to the loop that
/// asked. Lifetime rule: holds nothing of the server.
package struct LoopFigures: Sendable {
    var counts: ServerStats.Counts
    var timers: Int
    /// Pauses of publishers by lagging subscribers so far, paused publishers now, and the
    /// seconds they have spent paused (`PublisherPauses`).
    var publishPauses: UInt64
    var publishersPaused: Int
    var publishPausedSeconds: Double
    /// WebSockets with permessage-deflate and gzip'd event streams open now.
    var compressedWebSockets: Int
    var compressedEventStreams: Int
    /// Open connections by what carries them (`SessionTransport.transportName`, "http").
    var connectionsByTransport: [String: Int]

    /// Adds `other`'s figures (another loop's) to these.
    mutating func add(_ other: LoopFigures) {
        counts.add(other.counts)
        timers += other.timers
        publishPauses &+= other.publishPauses
        publishersPaused += other.publishersPaused
        publishPausedSeconds += other.publishPausedSeconds
        compressedWebSockets += other.compressedWebSockets
        compressedEventStreams += other.compressedEventStreams
        connectionsByTransport.merge(other.connectionsByTransport, uniquingKeysWith: +)
    }
}
