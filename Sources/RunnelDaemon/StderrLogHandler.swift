import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A swift-log handler writing one line per event to stderr, in journald's format when stderr
/// is the journal (see `LogLineFormatter`, `JournalStream`).
///
/// The minimum level lives in a shared `LogLevelSetting`, so a SIGHUP reload changes it for
/// every logger at once; setting `logLevel` on any logger sets that shared level (a deliberate
/// departure from swift-log's per-logger levels: the daemon has one level). Each line goes out in
/// one `write(2)`, so lines from different threads do not interleave within a line (for lines
/// up to `PIPE_BUF` on pipes). A value type holding only `Sendable` state; use from any thread.
public struct StderrLogHandler: LogHandler {
    public let label: String
    public let levelSetting: LogLevelSetting
    public let formatter: LogLineFormatter
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let output: @Sendable (String) -> Void

    /// A handler for `label`; `output` receives each finished line (stderr by default).
    public init(
        label: String, levelSetting: LogLevelSetting, formatter: LogLineFormatter,
        metadataProvider: Logger.MetadataProvider? = nil,
        output: @escaping @Sendable (String) -> Void = StderrLogHandler.writeToStderr
    ) {
        self.label = label
        self.levelSetting = levelSetting
        self.formatter = formatter
        self.metadataProvider = metadataProvider
        self.output = output
    }

    /// Installs this handler for every `Logger` of the process; the formatter's style follows
    /// whether stderr is the journal. swift-log allows one bootstrap per process: call this once,
    /// early in `runneld`'s start-up, and keep `levelSetting` to change the level later.
    public static func bootstrap(levelSetting: LogLevelSetting) {
        let formatter = LogLineFormatter(style: JournalStream.stderrIsJournal() ? .journald : .plain)
        LoggingSystem.bootstrap { label in
            StderrLogHandler(label: label, levelSetting: levelSetting, formatter: formatter)
        }
    }

    public var logLevel: Logger.Level {
        get { levelSetting.level }
        set { levelSetting.level = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        // Logger checks the level before calling, but the shared level may have just changed.
        guard event.level >= levelSetting.level else { return }
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        var now = timespec()
        if formatter.style == .plain { clock_gettime(CLOCK_REALTIME, &now) }
        output(
            formatter.format(
                level: event.level, label: label, message: event.message.description, metadata: merged, time: now))
    }

    /// Writes `line` to file descriptor 2 in as few `write` calls as the kernel allows.
    public static func writeToStderr(_ line: String) {
        var line = line
        line.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return  // Nowhere left to report a failing stderr.
                }
                offset += written
            }
        }
    }
}
