#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Nanoseconds on the monotonic clock.
func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// The best (smallest) time of `runs` runs of `body`, in nanoseconds.
func bestOf(_ runs: Int, _ body: () -> Void) -> UInt64 {
    var best = UInt64.max
    for _ in 0..<runs {
        let start = monotonicNanoseconds()
        body()
        best = min(best, monotonicNanoseconds() - start)
    }
    return best
}

/// Keeps results observable so the optimiser cannot drop the work.
func consume(_ value: Int) {
    if value == 42_424_242_424 { print("") }
}

/// One case measured for both libraries.
struct CaseResult {
    let name: String
    let events: Int
    let runnelNanoseconds: UInt64
    let openCombineNanoseconds: UInt64

    var runnelPerEvent: Double { Double(runnelNanoseconds) / Double(events) }
    var openCombinePerEvent: Double { Double(openCombineNanoseconds) / Double(events) }
    var ratio: Double { Double(runnelNanoseconds) / Double(openCombineNanoseconds) }
}

func format(_ value: Double, decimals: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int(value * scale + 0.5)
    let whole = scaled / Int(scale)
    let fraction = scaled % Int(scale)
    guard decimals > 0 else { return "\(whole)" }
    let digits = String(fraction)
    return "\(whole)." + String(repeating: "0", count: decimals - digits.count) + digits
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}
