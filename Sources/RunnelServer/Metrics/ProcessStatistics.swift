#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The process's own figures, which `/metrics` reports under the names Prometheus client
/// libraries use for them (`process_cpu_seconds_total`, `process_resident_memory_bytes`, ...).
/// Read on demand, a few system calls each; any figure the system does not give is nil and
/// left out.
package struct ProcessStatistics {
    /// User and system CPU time, in seconds.
    var cpuSeconds: Double
    /// Resident memory, in bytes (`/proc/self/statm`).
    var residentBytes: Int?
    /// Open file descriptors (`/proc/self/fd`, the descriptor that reads it excepted).
    var openDescriptors: Int?
    /// The soft limit on file descriptors.
    var maxDescriptors: Int?

    static func current() -> ProcessStatistics {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu =
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
        var limit = rlimit()
        let maxDescriptors = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 ? Int(clamping: limit.rlim_cur) : nil
        return ProcessStatistics(
            cpuSeconds: cpu, residentBytes: residentBytes(), openDescriptors: openDescriptors(),
            maxDescriptors: maxDescriptors)
    }

    /// Now, in seconds since the Unix epoch.
    package static func wallClockSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// `/proc/self/statm` is "size resident shared ...", in pages, on one short line.
    private static func residentBytes() -> Int? {
        let descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer -> Int? in
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            guard count > 0 else { return nil }
            let fields = buffer[0..<count].split(separator: UInt8(ascii: " "), maxSplits: 2)
            guard fields.count >= 2, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return nil }
            return pages * sysconf(Int32(_SC_PAGESIZE))
        }
    }

    private static func openDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != UInt8(ascii: ".") { count += 1 }
        }
        return count - 1  // the descriptor opendir holds
    }
}
