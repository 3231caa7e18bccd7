import Runnel
import RunnelUV

/// Slow consumers' view of publishers (`Session+SlowConsumer`): whose value is being fanned out right now
/// (so a subscriber it puts over the soft limit knows whom to pause), and what `stats` and
/// `/metrics` report about pauses. One per server, held directly by every session and HTTP
/// publication (as `ServerStats` is). Loop thread only.
package final class PublisherPauses {
    /// The publisher whose value is being delivered now; nil outside a publish (timers,
    /// replay on subscribe, values that waited for the disk: nobody to pause). Not retained:
    /// `PublisherGate.publishing` sets and clears it around one synchronous publish, while the
    /// gate's owner holds the gate, so a retain and release per publish buys nothing.
    var current: PublisherGate? { currentGate?.takeUnretainedValue() }
    fileprivate(set) var currentGate: Unmanaged<PublisherGate>?
    /// Pauses begun since the server started.
    private(set) var pauses: UInt64 = 0
    /// Publishers paused now.
    private(set) var pausedNow = 0
    /// Nanoseconds of finished pauses, and the sum of the start times of the pauses under way
    /// (so the total at any moment needs no walk over the paused publishers).
    private var finishedNanoseconds: Int64 = 0
    private var startsUnderWay: Int64 = 0
    let clock: LoopScheduler

    init(clock: LoopScheduler) { self.clock = clock }

    /// Seconds publishers have spent paused, pauses under way included.
    var pausedSeconds: Double {
        let underWay = Int64(pausedNow) * clock.now.nanoseconds - startsUnderWay
        return Double(finishedNanoseconds + underWay) / 1e9
    }

    /// A pause begins; returns when, for `ended(startedAt:)`.
    func began() -> Int64 {
        let now = clock.now.nanoseconds
        pauses &+= 1
        pausedNow += 1
        startsUnderWay += now
        return now
    }

    func ended(startedAt start: Int64) {
        assert(pausedNow > 0, "a pause ended that had not begun")
        pausedNow -= 1
        startsUnderWay -= start
        finishedNanoseconds += clock.now.nanoseconds - start
    }
}

/// Why a publisher is held: a subscriber lagging behind it (a pause, as `stats` counts them),
/// or another loop still delivering its earlier values (`ReaderLink`'s pace: flow control
/// between loops, which one loop does not need and `stats` does not count).
enum PublisherHold: Sendable {
    case laggard
    case pace
}

/// One publisher's side of `backpressure`: how many lagging subscribers its values have put or
/// found over the soft limit (each holds the gate until it is back under it, or closed), how
/// many loops behind on its values pace it, and what to do once none does. Its owner (a
/// session, an HTTP publication) stops reading its client while `isPaused`, holding what it had
/// read already. A gate may stand for a publisher on another loop (`RemotePublishers`): it
/// tells that loop instead (`relay`), which counts the pause.
///
/// Thread rules: loop thread only. Lifetime rule: the owner holds it, and so does every
/// laggard it waits on until it lets go (`laggardEnded`); it holds its owner only weakly,
/// through the action `whenResumed` was given.
package final class PublisherGate {
    private let pauses: PublisherPauses
    /// Laggards holding this gate.
    private(set) var laggards = 0
    /// Loops behind on its values holding this gate (`PublisherHold.pace`).
    private(set) var pacers = 0
    /// When the pause under way began (`PublisherPauses.began()`).
    private var pausedAt: Int64 = 0
    private var onResume: (() -> Void)?
    /// Set once its owner has gone: later releases change nothing.
    private var isClosed = false
    /// For a stand-in for another loop's publisher: told `true` when the first laggard (or
    /// pacer) takes hold, `false` when the last lets go; nil for a publisher of this loop.
    var relay: ((_ hold: PublisherHold, _ began: Bool) -> Void)?
    /// The number other loops know it by (`PublisherRegistry`); 0 until it has one.
    var remoteNumber: UInt64 = 0
    /// For the owner's stand-in for a reading loop's publisher: that loop, which made the
    /// bytes of the values published through the gate (`ReplicatedValues.maker`); nil for a
    /// publisher of this loop.
    var maker: ReplicaReader?

    package init(pauses: PublisherPauses) { self.pauses = pauses }

    /// Whether the owner must stop reading its client.
    @inline(__always) package var isPaused: Bool { laggards | pacers != 0 }

    /// Runs `action` once the last laggard and pacer let go (at once when none holds the
    /// gate); a new call replaces a waiting one.
    package func whenResumed(_ action: @escaping () -> Void) {
        guard isPaused else { return action() }
        onResume = action
    }

    /// Publishes through the gate: `current` names it while `publish` runs, so a subscriber
    /// the value puts over the soft limit can pause it. Publishes do not nest (a delivery
    /// publishes nothing).
    @inline(__always)
    func publishing(_ publish: () -> Void) {
        assert(pauses.currentGate == nil, "a publish inside a publish")
        pauses.currentGate = Unmanaged.passUnretained(self)
        publish()
        pauses.currentGate = nil
    }

    /// A laggard (a session over the soft limit) takes hold of the gate: the first pauses it.
    func laggardBegan() {
        laggards += 1
        guard laggards == 1 && !isClosed else { return }
        if let relay { return relay(.laggard, true) }
        pausedAt = pauses.began()
    }

    /// A loop behind on this publisher's values takes hold of the gate (`ReaderLink`).
    func paceBegan() {
        pacers += 1
        guard pacers == 1 && !isClosed, let relay else { return }
        relay(.pace, true)
    }

    /// The loop has caught up: the last pacer, with no laggard, resumes the publisher.
    func paceEnded() {
        assert(pacers > 0, "a pacer let go of a gate it did not hold")
        pacers -= 1
        guard pacers == 0, !isClosed else { return }
        if let relay { return relay(.pace, false) }
        resumeUnlessHeld()
    }

    /// `laggardBegan()` or `paceBegan()` (`began`), or their ends, as `hold` says.
    func take(_ hold: PublisherHold, began: Bool) {
        switch (hold, began) {
        case (.laggard, true): laggardBegan()
        case (.laggard, false): laggardEnded()
        case (.pace, true): paceBegan()
        case (.pace, false): paceEnded()
        }
    }

    /// A laggard lets go (it is back under the soft limit, or closed): the last resumes it.
    func laggardEnded() {
        assert(laggards > 0, "a laggard let go of a gate it did not hold")
        laggards -= 1
        guard laggards == 0, !isClosed else { return }
        if let relay { return relay(.laggard, false) }
        pauses.ended(startedAt: pausedAt)
        resumeUnlessHeld()
    }

    private func resumeUnlessHeld() {
        guard !isPaused else { return }
        let action = onResume
        onResume = nil
        action?()
    }

    /// The owner has gone: a pause under way ends now, as far as the counts go.
    package func close() {
        guard !isClosed else { return }
        isClosed = true
        onResume = nil
        if laggards > 0 { pauses.ended(startedAt: pausedAt) }
    }
}
