/// How long the loop's turns took: the time each iteration spent working (timers, I/O
/// callbacks, the flush), its idle wait in the kernel taken out, counted in fixed buckets.
/// A long turn is a stall for every connection on the loop.
///
/// A value type; a loop's is `LoopScheduler.turnLengths`, kept by the loop itself when alone
/// and, for a loop of a group, in its `LoopStatistics` (behind a lock) for any thread to read.
public struct TurnLengths: Sendable {
    /// The buckets' upper bounds, in microseconds; the last bucket has none.
    public static let boundsMicroseconds: [UInt64] = [
        50, 100, 250, 500, 1000, 2500, 5000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000,
    ]

    /// Turns per bucket: `counts[i]` took at most `boundsMicroseconds[i]` (and more than the
    /// bound before it); the last counts the longer ones.
    public private(set) var counts = [UInt64](repeating: 0, count: TurnLengths.boundsMicroseconds.count + 1)
    public private(set) var turns: UInt64 = 0
    public private(set) var totalNanoseconds: UInt64 = 0
    public private(set) var longestNanoseconds: UInt64 = 0

    mutating func record(nanoseconds: UInt64) {
        let microseconds = nanoseconds / 1000
        var bucket = 0
        while bucket < Self.boundsMicroseconds.count && microseconds > Self.boundsMicroseconds[bucket] { bucket += 1 }
        counts[bucket] += 1
        turns += 1
        totalNanoseconds &+= nanoseconds
        longestNanoseconds = max(longestNanoseconds, nanoseconds)
    }

    /// The bound of the bucket that holds the `fraction` quantile (0.99: the 99th percentile),
    /// in microseconds, or the longest turn when that is shorter (or in the last bucket).
    public func quantileMicroseconds(_ fraction: Double) -> UInt64 {
        guard turns > 0 else { return 0 }
        let rank = UInt64((Double(turns) * fraction).rounded(.up))
        var seen: UInt64 = 0
        for (bucket, count) in counts.enumerated() {
            seen += count
            if seen >= rank {
                let longest = longestNanoseconds / 1000
                return bucket < Self.boundsMicroseconds.count ? min(Self.boundsMicroseconds[bucket], longest) : longest
            }
        }
        return longestNanoseconds / 1000
    }
}
