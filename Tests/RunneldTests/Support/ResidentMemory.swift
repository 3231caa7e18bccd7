import Foundation

/// A process's resident set size as Linux reports it, for tests that check the daemon gives
/// back what a burst of work took.
enum ResidentMemory {
    /// `VmRSS` of `pid` in bytes, read from `/proc/<pid>/status`; nil when the process is gone
    /// or the line is missing.
    static func bytes(of pid: pid_t) -> Int? { field("VmRSS", of: pid) }

    /// `VmHWM` of `pid` in bytes: the peak resident set size since the process started.
    static func peakBytes(of pid: pid_t) -> Int? { field("VmHWM", of: pid) }

    private static func field(_ name: String, of pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            // "VmRSS:     12345 kB"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kilobytes = Int(fields[1]) else { return nil }
            return kilobytes * 1024
        }
        return nil
    }
}
