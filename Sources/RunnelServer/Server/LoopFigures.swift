/// What one loop's server counts that `stats` and `/metrics` add up over the process's loops
/// (`ServerGroup.gatherFigures`): its counters, its armed timers, its paused publishers, its
/// compressed streams and its connections by transport; and, from the loop that owns the
/// subjects, theirs.
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
    /// The subjects' figures, from the loop that owns them; nil from another (decision 0011).
    var subjects: SubjectFigures?

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
        subjects = subjects ?? other.subjects
    }
}

/// What `stats` and `/metrics` report of the subjects, read on the loop that owns them: how
/// many, the bytes of the values they keep, and the durable journal's and the cluster's
/// figures (nil without them).
///
/// Thread rules: a value, like `LoopFigures`.
package struct SubjectFigures: Sendable {
    var count: Int
    var retainedBytes: Int
    var journal: JournalStatistics?
    var cluster: (any SharedFigures)?
}
