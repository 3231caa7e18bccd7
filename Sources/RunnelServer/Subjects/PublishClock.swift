import RunnelUV

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The clock values are stamped with when published (version 1.3's `ts`, `since`, `until`,
/// `retain_s`): Unix milliseconds that never go back, so each subject's values are in time
/// order and a replay can start at a time by skipping the older ones.
///
/// `SystemPublishClock` reads the system's; tests set theirs (`ManualPublishClock` in the
/// tests). Thread rules: loop thread only, like the store that reads it. Lifetime rule: held
/// by the store's `RetainedValues`.
protocol PublishClock: AnyObject {
    /// Now, in Unix milliseconds: never less than what it said before.
    func now() -> Int64
}

/// The system's real-time clock, held back from going back: when the system's clock is set
/// back (NTP stepping it), values keep the last time given until it catches up.
///
/// Read once per callback of `loop` that asks (`LoopScheduler.callbackCount`): the values one
/// read's bytes carry, or one batch from another loop, are stamped alike, with the time the
/// first of them was published, after all of them came in; a reading a value was a measurable
/// part of its CPU (bench/README.md, "Publish times read once a callback"). Without a loop
/// (tests, tools), read at every call.
final class SystemPublishClock: PublishClock {
    private var last: Int64 = 0
    /// The loop whose callbacks share a reading.
    private let loop: LoopScheduler?
    /// The loop's callback count when `last` was read.
    private var readIn: UInt64 = .max

    init(readOncePerCallbackOf loop: LoopScheduler? = nil) { self.loop = loop }

    func now() -> Int64 {
        if let loop {
            let callback = loop.callbackCount
            if callback == readIn { return last }
            readIn = callback
        }
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let milliseconds = Int64(spec.tv_sec) &* 1000 &+ Int64(spec.tv_nsec) / 1_000_000
        if milliseconds > last { last = milliseconds }
        return last
    }
}
