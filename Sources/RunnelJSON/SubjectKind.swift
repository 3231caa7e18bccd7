/// The kinds of named subject, as `create` names them: protocol vocabulary that the server and
/// the clients (the `runnel` CLI's `--kind`) share, kept here so a client need not link the server.
///
/// Thread rules: a value, `Sendable`. Lifetime rule: none.
public enum SubjectKind: String, Sendable, CaseIterable {
    /// Delivers only what is published after subscribing (the library's `Subject`).
    case subject
    /// Replays its last `capacity` values, then its terminal event (`ReplaySubject`).
    case replay
    /// Delivers its current value first (`BehaviorSubject`).
    case behavior
    /// Keeps the latest value of each key: a snapshot of its keys, then its changes
    /// (version 1.3's keyed subjects).
    case map
}
