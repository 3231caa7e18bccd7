/// What the server does with a connection whose unsent output passes `max_pending_bytes`.
public enum SlowConsumerPolicy: String, Sendable, Equatable, CaseIterable {
    /// Send one last `{"ev":"closing","code":"slow_consumer"}` line and close it (the default).
    case disconnect
    /// Drop events and report each gap with a `dropped` event.
    case drop
}
