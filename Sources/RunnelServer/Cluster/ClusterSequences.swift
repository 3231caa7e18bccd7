/// What a node knows of the plain values other nodes sent it (docs/protocol.md, "Clusters",
/// nothing missed silently): the last sequence number of each origin's values in each subject,
/// with the subject's epoch there. A number not above it is a second copy (NATS delivers one
/// per matching subscription: a subject and a pattern); a jump is values missed; a new epoch is
/// the subject made anew there, whose numbers start again.
///
/// Thread rules: a value, owned by the clustered node's store on the first loop.
struct ClusterSequences {
    private var last: [String: [String: (epoch: String, seq: UInt64)]] = [:]

    /// Takes `count` values from the `first`th of `origin` in `subject` (in its epoch `epoch`
    /// there): how many of them, from the start, were had already, and how many values before
    /// the first new one never came.
    mutating func receive(
        first: UInt64, count: Int, epoch: String, origin: String, subject: String
    ) -> (seen: Int, missed: UInt64) {
        precondition(count > 0, "a message of no values")
        let end = first + UInt64(count) - 1
        var result: (seen: Int, missed: UInt64) = (0, 0)
        if let known = last[origin]?[subject], known.epoch == epoch {
            guard end > known.seq else { return (count, 0) }
            result = first > known.seq + 1 ? (0, first - known.seq - 1) : (Int(known.seq + 1 - first), 0)
        }
        last[origin, default: [:]][subject] = (epoch, end)
        return result
    }

    /// Forgets what came from `origins` (instances gone: a restarted node is a new one).
    mutating func forget(origins: [String]) {
        for origin in origins { last[origin] = nil }
    }

    /// Forgets the subjects `isForgotten` names, of every origin: values sent meanwhile to
    /// other nodes were not missed here.
    mutating func forget(subjects isForgotten: (String) -> Bool) {
        for origin in last.keys {
            last[origin] = last[origin]!.filter { subject, _ in !isForgotten(subject) }
        }
    }
}
