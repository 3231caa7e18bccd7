/// What the server does with a connection whose unsent output passes `max_pending_bytes`, or
/// stays over `soft_pending_bytes` past `soft_pending_seconds`: a slow consumer. The global
/// `slow_consumer`; a subject may name its own (`create`, `[[subjects]]`), which applies to
/// the values that came from it.
public enum SlowConsumerPolicy: String, Sendable, Equatable, CaseIterable {
    /// Send one last `{"ev":"closing","code":"slow_consumer"}` line and close it (the default).
    case disconnect
    /// Drop events and report each gap with a `dropped` event.
    case drop
    /// While the connection is over the soft limit, stop reading each publisher whose value
    /// reached it; a slow consumer is closed as under `disconnect`.
    case backpressure
    /// Version 1.3: every subscription conflates (`"conflate": true` on `sub`): over the soft
    /// limit each keeps only its latest value waiting, and a connection is cut only when it
    /// reads nothing for the grace.
    case conflate

    /// `"disconnect", "drop", "backpressure" or "conflate"`, for error messages.
    package static var namesForErrors: String {
        let names = allCases.map { "\"\($0.rawValue)\"" }
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }
}
