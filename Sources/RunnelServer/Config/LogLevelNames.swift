import Logging

/// The log level names `log_level` and `--log-level` accept: swift-log's, least severe first.
enum LogLevelNames {
    static let list = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
}
