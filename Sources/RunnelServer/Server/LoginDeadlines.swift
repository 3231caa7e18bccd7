/// The sessions that have not yet sent a request and authenticated, with the instant at which
/// `login_timeout` closes each (`Session+Login`); the server's sweep takes the expired ones.
///
/// Thread rules: loop thread only. Lifetime rule: a value the server owns; it holds each
/// waiting session until the session logs in, closes or is taken as expired.
struct LoginDeadlines {
    private var waiting: [UInt64: (deadline: ContinuousClock.Instant, session: Session)] = [:]

    mutating func add(_ session: Session, deadline: ContinuousClock.Instant) {
        waiting[session.id] = (deadline, session)
    }

    mutating func remove(_ session: Session) {
        waiting[session.id] = nil
    }

    /// Removes and returns the sessions whose deadline is `now` or before.
    mutating func takeExpired(at now: ContinuousClock.Instant) -> [Session] {
        let expired = waiting.filter { $0.value.deadline <= now }
        for id in expired.keys { waiting[id] = nil }
        return expired.values.map(\.session)
    }
}
