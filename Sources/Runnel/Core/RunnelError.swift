/// Errors the library itself sends.
public enum RunnelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `timeout(_:on:)` ran out before the source terminated.
    case timedOut
    /// A signal completed without a value where one was required (`first()`).
    case noValue
    /// `dematerialize` met a value that is not an event; `reduceEach` or `not`/`and`/`or`
    /// met a value of the wrong shape.
    case unexpectedValue(String)
    /// `Signal.switch(_:cases:default:)` met a key with no case and no default.
    case noCase(String)

    public var description: String {
        switch self {
        case .timedOut: return "timed out"
        case .noValue: return "signal completed without a value"
        case .unexpectedValue(let detail): return "unexpected value: \(detail)"
        case .noCase(let key): return "no case for \(key) and no default"
        }
    }
}
