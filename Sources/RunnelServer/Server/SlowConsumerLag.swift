import Runnel

/// One stretch of time a session's unsent output spends over the soft limit
/// (`Session+SlowConsumer`): the grace timer, whether the grace has ended, whether an event of
/// the stretch closes the connection when it does, and the publishers paused on it.
///
/// Publishers are held two ways. Under `backpressure` a publisher is held until the lag ends
/// (`hold`). Under `disconnect` it is held only while the connection drains
/// (`holdWhileDraining`): the session looks every `drainCheck` at the bytes its client has
/// acknowledged (`drainChecked(acknowledged:sent:)`); a look that finds fewer than
/// `drainProgress` since the last lets those publishers go and marks the connection stalled,
/// and an event that finds the kernel has taken more of its output since (`sentBytes`, no
/// system call) holds them anew. So a burst is paced by the subscribers that read it, and one
/// that has stopped reading delays a publisher by a look or two (its kernel may still take in
/// what its receive buffer holds during the first).
///
/// The looks ask what the client acknowledged, not what the kernel took: a reader empties a
/// send buffer of megabytes for longer than a look before the kernel takes more (at a third
/// free), and would count as stalled while it reads. The floor keeps what kernels take in of
/// their own (into a receive buffer that nobody reads) from counting as reading.
///
/// Thread rules: loop thread only. Lifetime rule: its session holds it from the first event
/// over the soft limit until the output falls or the session closes, and then calls `end()`,
/// once, which stops the timers and lets every paused publisher go.
final class SlowConsumerLag {
    /// How long a connection holding publishers while it drains may go with its client
    /// acknowledging less than `drainProgress` before it counts as stalled and lets them go.
    static let drainCheck = Duration.milliseconds(50)
    /// The bytes a client must acknowledge between two looks to count as reading (320 KiB/s).
    static let drainProgress: UInt64 = 16 << 10

    /// Ends the grace; nil once it has ended (or with a grace of zero).
    private(set) var graceTimer: Disposable?
    /// The grace has ended: the connection is a slow consumer until its output falls.
    private(set) var isPastGrace: Bool
    /// An event under `disconnect` or `backpressure` came during the lag: the end of the
    /// grace closes the connection.
    var closesPastGrace = false
    /// A value was conflated during the lag: the end of the grace closes the connection if
    /// it read nothing of its output since the grace began (`acknowledgedAtGraceStart`).
    var conflates = false
    /// What the connection's client had acknowledged when the grace (or the last one
    /// restarted) began.
    private(set) var acknowledgedAtGraceStart: UInt64
    /// The publishers paused on this connection until the lag ends, each once.
    private(set) var publishers: [PublisherGate] = []
    /// The publishers paused on this connection while it drains, each once and none of them
    /// in `publishers`.
    private(set) var drainingPublishers: [PublisherGate] = []
    /// The next look at the connection's progress; nil when none is due.
    private(set) var drainTimer: Disposable?
    /// What the client had acknowledged at the last look (or when the looks began).
    private var acknowledgedAtCheck: UInt64 = 0
    /// The connection's `sentBytes` when a look found it stalled.
    private var sentWhenStalled: UInt64 = 0
    /// A look found no progress: publishers are not held while it drains until the kernel takes
    /// more of its output (`sentWhenStalled`).
    private(set) var isStalled = false
    private var hasEnded = false

    /// A lag whose grace ends when `graceTimer` fires (`graceEnded()`); with no timer (no
    /// grace), one past its grace at once. Its client has acknowledged `acknowledged` now.
    init(graceTimer: Disposable?, acknowledged: UInt64) {
        self.graceTimer = graceTimer
        isPastGrace = graceTimer == nil
        acknowledgedAtGraceStart = acknowledged
    }

    /// Pauses `publisher` until the lag ends (once, however many of its values come).
    func hold(_ publisher: PublisherGate) {
        assert(!hasEnded, "a publisher held by an ended lag")
        guard !publishers.contains(where: { $0 === publisher }) else { return }
        publishers.append(publisher)
        if let index = drainingPublishers.firstIndex(where: { $0 === publisher }) {
            drainingPublishers.remove(at: index)
        } else {
            publisher.laggardBegan()
        }
    }

    /// Pauses `publisher` while the connection, whose `sentBytes` is `sent` now, drains:
    /// nothing while it is stalled and the kernel has taken nothing more since. Returns true
    /// when a look at its progress must be armed (`drainCheckArmed`).
    func holdWhileDraining(_ publisher: PublisherGate, sent: UInt64) -> Bool {
        assert(!hasEnded, "a publisher held by an ended lag")
        if isStalled {
            guard sent != sentWhenStalled else { return false }
            isStalled = false
        }
        if !publishers.contains(where: { $0 === publisher })
            && !drainingPublishers.contains(where: { $0 === publisher })
        {
            drainingPublishers.append(publisher)
            publisher.laggardBegan()
        }
        return drainTimer == nil
    }

    /// The look `holdWhileDraining` (or the last look) asked for is armed, the client having
    /// acknowledged `acknowledged` now (`timer` nil: the loop is stopping, and there will be
    /// none).
    func drainCheckArmed(_ timer: Disposable?, acknowledged: UInt64) {
        assert(drainTimer == nil && !hasEnded, "a second look at a lag's progress")
        drainTimer = timer
        acknowledgedAtCheck = acknowledged
    }

    /// The look is due, the client having acknowledged `acknowledged` and the kernel taken
    /// `sent`: with progress since the last (`drainProgress`), it returns true (arm the next);
    /// without, the publishers held while it drains go.
    func drainChecked(acknowledged: UInt64, sent: UInt64) -> Bool {
        drainTimer = nil
        guard acknowledged < acknowledgedAtCheck &+ Self.drainProgress else { return !drainingPublishers.isEmpty }
        isStalled = true
        sentWhenStalled = sent
        let released = drainingPublishers
        drainingPublishers = []
        for publisher in released { publisher.laggardEnded() }
        return false
    }

    /// The grace timer fired.
    func graceTimerFired() { graceTimer = nil }

    /// The grace ended with the output still over the soft limit.
    func passGrace() { isPastGrace = true }

    /// A conflating connection that read some output in the grace gets another, which
    /// `graceTimer` ends; its client has acknowledged `acknowledged` now.
    func graceRestarted(_ graceTimer: Disposable?, acknowledged: UInt64) {
        assert(self.graceTimer == nil && !hasEnded, "a grace restarted while one runs")
        self.graceTimer = graceTimer
        acknowledgedAtGraceStart = acknowledged
    }

    /// The lag is over: the timers stop and every publisher paused on it is let go.
    func end() {
        precondition(!hasEnded, "a lag ended twice")
        hasEnded = true
        graceTimer?.dispose()
        graceTimer = nil
        drainTimer?.dispose()
        drainTimer = nil
        let paused = publishers + drainingPublishers
        publishers = []
        drainingPublishers = []
        for publisher in paused { publisher.laggardEnded() }
    }
}
