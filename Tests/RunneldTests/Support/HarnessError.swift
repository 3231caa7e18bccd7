/// Why a harness call could not produce what a test asked for.
enum HarnessError: Error, CustomStringConvertible {
    /// No complete line arrived before the deadline.
    case timeout(String)
    /// The peer closed the connection before a complete line arrived.
    case closed(String)
    /// A server line that is not JSON.
    case badJSON(String)
    /// The daemon could not be found, started, or did not report its address.
    case launch(String)

    var description: String {
        switch self {
        case .timeout(let what): return "timed out: \(what)"
        case .closed(let what): return "connection closed: \(what)"
        case .badJSON(let line): return "not JSON: \(line)"
        case .launch(let why): return "launch failed: \(why)"
        }
    }
}
