/// Sessions with an instant each at which the server's sweep acts on them: the server keeps
/// one for `login_timeout` (`Session+Login`) and one for the expiry of the JWT a session
/// authenticated with (`Session+Expiry`). The sweep takes the expired ones.
///
/// Thread rules: loop thread only. Lifetime rule: a value the server owns; it holds each
/// session until the session's deadline is removed or replaced, the session closes, or it is
/// taken as expired.
struct SessionDeadlines {
    private var waiting: [UInt64: (deadline: ContinuousClock.Instant, session: Session)] = [:]

    /// Sets `session`'s deadline, replacing the one it had.
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
