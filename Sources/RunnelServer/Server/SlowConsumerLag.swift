import Runnel

/// One stretch of time a session's unsent output spends over the soft limit
/// (`Session+SlowConsumer`): the grace timer, whether the grace has ended, whether an event of
/// the stretch closes the connection when it does, and the publishers paused on it.
///
/// Thread rules: loop thread only. Lifetime rule: its session holds it from the first event
/// over the soft limit until the output falls or the session closes, and then calls `end()`,
/// once, which stops the timer and lets every paused publisher go.
final class SlowConsumerLag {
    /// Ends the grace; nil once it has ended (or with a grace of zero).
    private(set) var graceTimer: Disposable?
    /// The grace has ended: the connection is a slow consumer until its output falls.
    private(set) var isPastGrace: Bool
    /// An event under `disconnect` or `backpressure` came during the lag: the end of the
    /// grace closes the connection.
    var closesPastGrace = false
    /// The publishers paused on this connection, each once.
    private(set) var publishers: [PublisherGate] = []
    private var hasEnded = false

    /// A lag whose grace ends when `graceTimer` fires (`graceEnded()`); none is past its grace
    /// at once.
    init(graceTimer: Disposable?) {
        self.graceTimer = graceTimer
        isPastGrace = graceTimer == nil
    }

    /// Pauses `publisher` until the lag ends (once, however many of its values come).
    func hold(_ publisher: PublisherGate) {
        assert(!hasEnded, "a publisher held by an ended lag")
        guard !publishers.contains(where: { $0 === publisher }) else { return }
        publishers.append(publisher)
        publisher.laggardBegan()
    }

    /// The grace timer fired.
    func graceTimerFired() { graceTimer = nil }

    /// The grace ended with the output still over the soft limit.
    func passGrace() { isPastGrace = true }

    /// The lag is over: the grace stops and every publisher paused on it is let go.
    func end() {
        precondition(!hasEnded, "a lag ended twice")
        hasEnded = true
        graceTimer?.dispose()
        graceTimer = nil
        let paused = publishers
        publishers = []
        for publisher in paused { publisher.laggardEnded() }
    }
}
