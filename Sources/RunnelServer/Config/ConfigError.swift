/// A configuration problem: where it came from, which key, and what is wrong.
///
/// Its description is the one line `runneld` prints on stderr before exiting with status 2,
/// e.g. `config /etc/runnel/runneld.toml: key 'max_line_bytes': must be an integer between 64
/// and 1073741824, got -5` or `command line: option '--listen': ...`.
public struct ConfigError: Error, Equatable, CustomStringConvertible {
    /// `config PATH`, `command line`, or `config` for a string without a file.
    public let origin: String
    /// The key (`max_line_bytes`, `subjects[2].capacity`) or option (`--listen`) at fault;
    /// `nil` for problems of the whole file (unreadable, not TOML).
    public let key: String?
    public let problem: String

    public init(origin: String, key: String?, problem: String) {
        self.origin = origin
        self.key = key
        self.problem = problem
    }

    public var description: String {
        guard let key else { return "\(origin): \(problem)" }
        let noun = key.hasPrefix("--") ? "option" : "key"
        return "\(origin): \(noun) '\(key)': \(problem)"
    }
}
