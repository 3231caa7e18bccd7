/// Where a session is in its life. It only moves forward: open, then closing (the client
/// sent its last request, or the server is closing it), then closed (its transport closed).
/// Nothing is delivered and no request is handled once it is not open.
///
/// Thread rules: loop thread only. Lifetime rule: a value the session owns; only
/// `Session` changes it.
enum SessionState: Comparable {
    case open
    case closing
    case closed

    /// Moves to `next`, never back.
    mutating func advance(to next: SessionState) {
        assert(next >= self, "a session's state moved back")
        self = max(self, next)
    }
}
