import Foundation

/// A point in time a wait must not pass; turns a remaining span into `poll()` milliseconds.
///
/// Value type, safe anywhere. Tests never sleep to wait for a condition: they poll a socket or
/// retry a request until a deadline.
struct Deadline: Sendable {
    let instant: ContinuousClock.Instant

    init(_ timeout: Duration) { instant = ContinuousClock.now.advanced(by: timeout) }

    var hasPassed: Bool { ContinuousClock.now >= instant }

    /// Milliseconds left, rounded up, never negative; `poll()`'s timeout argument.
    var remainingMilliseconds: Int32 {
        let left = ContinuousClock.now.duration(to: instant)
        if left <= .zero { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}

/// Retries `attempt` until it returns a value or `timeout` passes, pausing `interval` between tries.
/// For conditions only observable by asking the server again (a reload, a disposal).
func eventually<T>(
    timeout: Duration = .seconds(5), interval: Duration = .milliseconds(20), _ attempt: () throws -> T?
) throws -> T? {
    let deadline = Deadline(timeout)
    while true {
        if let value = try attempt() { return value }
        if deadline.hasPassed { return nil }
        pollPause(interval)
    }
}

/// Blocks the calling thread for `interval` using `poll()` with no descriptors.
func pollPause(_ interval: Duration) {
    _ = poll(nil, 0, Deadline(interval).remainingMilliseconds)
}
