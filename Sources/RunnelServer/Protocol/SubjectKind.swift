/// The kinds of named subject, as `create` names them.
public enum SubjectKind: String, Sendable, CaseIterable {
    /// Delivers only what is published after subscribing (the library's `Subject`).
    case subject
    /// Replays its last `capacity` values, then its terminal event (`ReplaySubject`).
    case replay
    /// Delivers its current value first (`BehaviorSubject`).
    case behavior
}
