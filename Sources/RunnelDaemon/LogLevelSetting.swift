import Logging
import Synchronization

/// The minimum log level shared by every `StderrLogHandler` made from it, changeable while the
/// daemon runs (a SIGHUP reload sets it from the new `log_level`).
///
/// Lock-free: handlers read it on every log call from any thread; writes are rare.
public final class LogLevelSetting: Sendable {
    private let index: Atomic<Int>

    public init(_ level: Logger.Level) { index = Atomic(Self.index(of: level)) }

    /// The current minimum level; setting it affects every handler at once.
    public var level: Logger.Level {
        get { Logger.Level.allCases[index.load(ordering: .relaxed)] }
        set { index.store(Self.index(of: newValue), ordering: .relaxed) }
    }

    private static func index(of level: Logger.Level) -> Int { Logger.Level.allCases.firstIndex(of: level)! }
}
