#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Whether a file descriptor is connected to journald.
///
/// systemd sets `JOURNAL_STREAM=DEVICE:INODE` for a service whose stdout/stderr go to the
/// journal. Comparing that pair with the descriptor's own `fstat` (as `sd_journal_stream_fd`'s
/// documentation advises) keeps a child whose stderr was redirected elsewhere from writing
/// `<N>` prefixes into a terminal or file that merely inherited the variable.
public enum JournalStream {
    /// Whether `descriptor` is the stream named by `environmentValue` (`JOURNAL_STREAM`).
    public static func isJournal(descriptor: Int32, environmentValue: String?) -> Bool {
        guard let environmentValue else { return false }
        let parts = environmentValue.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// Whether this process's stderr goes to journald.
    public static func stderrIsJournal() -> Bool {
        let value = getenv("JOURNAL_STREAM").map { String(cString: $0) }
        return isJournal(descriptor: STDERR_FILENO, environmentValue: value)
    }
}
