#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A point in time a wait must not pass; turns what is left into `poll()` milliseconds.
///
/// A value, safe on any thread. Tests never sleep to wait for a condition: they poll a socket
/// or check again until a deadline.
public struct Deadline: Sendable {
    public let instant: ContinuousClock.Instant

    public init(_ timeout: Duration) { instant = ContinuousClock.now.advanced(by: timeout) }

    public var hasPassed: Bool { ContinuousClock.now >= instant }

    /// Milliseconds left, rounded up, never negative; `poll()`'s timeout argument.
    public var remainingMilliseconds: Int32 {
        let left = ContinuousClock.now.duration(to: instant)
        if left <= .zero { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}

/// Blocks the calling thread for `interval`, using `poll()` with no descriptors.
public func pollPause(_ interval: Duration) {
    _ = poll(nil, 0, Deadline(interval).remainingMilliseconds)
}
