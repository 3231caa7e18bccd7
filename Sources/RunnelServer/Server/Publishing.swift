/// The steps of `pub` that do not depend on the front door it came through (a request line,
/// an HTTP `POST /pub/SUBJECT`), written once. Loop thread only.
extension SubjectStore {
    /// Publishes `value` to `entry` and counts it: `terminated` when the subject has ended,
    /// `storage` when a durable subject cannot be written now. A durable value is on disk
    /// once `whenWritten` runs.
    func publish(_ value: RawJSON, to entry: SubjectEntry, counting stats: ServerStats) throws(ProtocolError) {
        guard entry.acceptsValues else { throw ProtocolError(.terminated, "subject '\(entry.name)' is terminated") }
        if entry.isDurable { try checkDurableWrites() }
        stats.published &+= 1
        publish(value, to: entry)
    }
}

extension Server {
    /// The subject `pub` names: an existing one as it is (its name was checked when it was
    /// created), else a valid name, created when `auto_create` is on.
    func publishTarget(named name: String) throws(ProtocolError) -> SubjectEntry {
        if let entry = subjects[name] { return entry }
        try SubjectName.check(name)
        return try subjectForUse(name)
    }
}
