/// Tries `attempt` until it returns a value or `timeout` passes, pausing `interval` between
/// tries; returns that value, or nil at the deadline. For what another thread or process brings
/// about in its own time (a loop's callback, a daemon's reload), seen only by looking again.
///
/// Runs `attempt` on the calling thread, which it blocks; the last try comes after the
/// deadline, so a condition that holds by then is seen.
public func eventually<Value>(
    timeout: Duration = .seconds(10), interval: Duration = .milliseconds(10), _ attempt: () throws -> Value?
) rethrows -> Value? {
    let deadline = Deadline(timeout)
    while true {
        if let value = try attempt() { return value }
        if deadline.hasPassed { return nil }
        pollPause(interval)
    }
}

/// Checks `condition` until it holds or `timeout` passes, as the form above does; returns
/// whether it held.
///
/// Without this form a `Bool` closure would go to the one above as a `Bool?` that is never
/// nil, and a condition that does not hold yet would count as an answer.
public func eventually(
    timeout: Duration = .seconds(10), interval: Duration = .milliseconds(10), _ condition: () throws -> Bool
) rethrows -> Bool {
    try eventually(timeout: timeout, interval: interval) { try condition() ? true : nil } ?? false
}
