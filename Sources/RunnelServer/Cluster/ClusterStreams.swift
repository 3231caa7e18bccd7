import RunnelProtocol

/// The retained subjects' streams this node consumes, by epoch (a stream's values come by it):
/// each one's entry, its consumer once started, how far the consumer has delivered it, the seq
/// it has to reach to have caught up with what the stream held when it started, and the seq at
/// which the subject ends; and what waits for a consumer to get further (`ConsumerWaits`).
///
/// Invariants: one consumer a stream (asserted); a consumer that starts after its entry went is
/// handed back to be stopped; a stream catches up and ends at most once; what waits on a
/// stream runs when the stream gets there or stops being consumed here, whichever comes first. `Consumer` is generic so that tests need no NATS.
///
/// Thread rules: a value, owned by the clustered node's store on the first loop.
struct ClusterStreams<Consumer> {
    private struct Stream {
        let entry: SubjectEntry
        var consumer: Consumer?
        /// The last seq the consumer delivered.
        var delivered: UInt64 = 0
        /// The stream's last seq when the consumer started, until the consumer delivers it.
        var catchingUpTo: UInt64?
        /// The seq after which the subject ends here, and how.
        var ending: (last: UInt64, error: ProtocolError?)?

        /// The consumer delivered as far as `seq`: whether that caught it up, and the end due
        /// now (`.some(nil)`: completed).
        mutating func reach(_ seq: UInt64) -> (caughtUp: Bool, ending: ProtocolError??) {
            delivered = max(delivered, seq)
            var caughtUp = false
            if let target = catchingUpTo, seq >= target {
                catchingUpTo = nil
                caughtUp = true
            }
            guard let due = ending, seq >= due.last else { return (caughtUp, nil) }
            ending = nil
            return (caughtUp, .some(due.error))
        }
    }

    private var streams: [String: Stream] = [:]
    /// Consumers asked for and not started or failed yet (their entries may be gone meanwhile).
    private var starting = 0
    /// The epochs whose consumers are catching up.
    private var behind: Set<String> = []
    private var waits = ConsumerWaits()

    /// Whether every consumer asked for has started (or failed) and delivered what its stream
    /// held when it started.
    var hasCaughtUp: Bool { starting == 0 && behind.isEmpty }

    /// The entry whose stream is `epoch`'s, consumed here or starting to be.
    func entry(_ epoch: String) -> SubjectEntry? { streams[epoch]?.entry }

    /// Every entry whose stream is consumed here or starting to be.
    var entries: [SubjectEntry] { streams.values.map(\.entry) }

    /// Whether `epoch`'s consumer runs (started, and its entry still here).
    func isConsuming(_ epoch: String) -> Bool { streams[epoch]?.consumer != nil }

    /// The last seq `epoch`'s consumer delivered (0 before any).
    func delivered(_ epoch: String) -> UInt64 { streams[epoch]?.delivered ?? 0 }

    // MARK: A consumer's life

    /// A consumer of `entry`'s stream is being started.
    mutating func starting(_ entry: SubjectEntry) {
        assert(streams[entry.epoch] == nil, "a second consumer of one stream")
        streams[entry.epoch] = Stream(entry: entry)
        starting += 1
    }

    /// A consumer asked for started, the stream's last seq `last` then: false when its entry went
    /// meanwhile, and the consumer is to be stopped.
    mutating func started(_ epoch: String, _ consumer: Consumer, last: UInt64) -> Bool {
        starting -= 1
        assert(starting >= 0)
        guard let entry = streams[epoch]?.entry else { return false }
        assert(streams[epoch]?.consumer == nil)
        streams[epoch]?.consumer = consumer
        if last > entry.lastSeq {
            streams[epoch]?.catchingUpTo = last
            behind.insert(epoch)
        }
        return true
    }

    /// A consumer asked for could not start: its stream delivers nothing here.
    mutating func failedToStart() {
        starting -= 1
        assert(starting >= 0)
    }

    /// What `consumed` found due.
    struct Reached {
        /// What waited for the stream to get this far, to run in order.
        var waits: [() -> Void] = []
        /// The consumer has caught up with what the stream held when it started.
        var caughtUp = false
        /// The subject ends here now, with this error (nil: completed).
        var ending: ProtocolError??
    }

    /// `epoch`'s consumer delivered its stream as far as `seq`. (Its record is changed in place:
    /// one lookup a value.)
    mutating func consumed(_ seq: UInt64, of epoch: String) -> Reached {
        guard let (caughtUp, ending) = streams[epoch]?.reach(seq) else { return Reached() }
        if caughtUp { behind.remove(epoch) }
        return Reached(
            waits: waits.isEmpty ? [] : waits.delivered(seq, epoch: epoch), caughtUp: caughtUp, ending: ending)
    }

    /// `epoch`'s subject ends here once the consumer has delivered seq `last`: its entry when it
    /// already has (end it now); nil when it ends later (`consumed`) or is not consumed here.
    mutating func ends(_ epoch: String, after last: UInt64, error: ProtocolError?) -> SubjectEntry? {
        guard let entry = streams[epoch]?.entry else { return nil }
        if entry.lastSeq >= last { return entry }
        streams[epoch]?.ending = (last, error)
        return nil
    }

    /// `epoch`'s stream is no longer consumed here: its consumer to stop (nil while starting:
    /// `started` hands it back), and what waited on it, to run now.
    mutating func stop(_ epoch: String) -> (consumer: Consumer?, waits: [() -> Void]) {
        let stream = streams.removeValue(forKey: epoch)
        behind.remove(epoch)
        return (stream?.consumer, waits.ended(epoch: epoch))
    }

    // MARK: Waits

    /// `action` is to run once `epoch`'s stream is delivered as far as `seq` (or no longer
    /// consumed here); its id, for `cancelWait`.
    mutating func wait(for seq: UInt64, of epoch: String, _ action: @escaping () -> Void) -> UInt64 {
        waits.add(epoch: epoch, seq: seq, action)
    }

    /// The wait `id` stops: its action, unless it ran or stopped before.
    mutating func cancelWait(_ id: UInt64) -> (() -> Void)? { waits.cancel(id) }
}
