import RunnelJSON
import RunnelProtocol
import RunnelUV

/// The values the subjects keep for late subscribers (a replay subject's history, a behavior
/// subject's current value), all subjects together: their bytes against `max_retained_bytes`,
/// the per-subject bound new replay subjects get (`max_replay_bytes`), the clock values are
/// stamped with as they are published (`clock`), and the subjects that keep values for a time
/// only (`retain_s`), which `dropExpired()` ages.
///
/// A subject store owns one; each `SubjectEntry` that retains values reports its changes to
/// it while the store holds the entry. Loop thread only.
package final class RetainedValues {
    /// What every value published through the store is stamped with (`Message.time`).
    let clock: any PublishClock
    /// The subjects with a `retain_s`, by identity.
    private var ageing: [ObjectIdentifier: SubjectEntry] = [:]
    /// The bytes retained now, by every subject of the store.
    private(set) var bytes = 0
    /// The most bytes all subjects may retain together (`max_retained_bytes`).
    var maxBytes: Int
    /// The most bytes a new replay subject keeps (`max_replay_bytes`): past it, its oldest
    /// values are dropped, as past its capacity.
    var maxReplayBytes: Int

    /// With the limits `config` sets and the system's clock, read once per callback of `loop`
    /// (`SystemPublishClock`), the loop of the store that owns them.
    package convenience init(limitsOf config: ServerConfig, loop: LoopScheduler) {
        self.init(
            maxBytes: config.maxRetainedBytes, maxReplayBytes: config.maxReplayBytes,
            clock: SystemPublishClock(readOncePerCallbackOf: loop))
    }

    init(
        maxBytes: Int = ServerConfig().maxRetainedBytes, maxReplayBytes: Int = ServerConfig().maxReplayBytes,
        clock: any PublishClock = SystemPublishClock()
    ) {
        self.maxBytes = maxBytes
        self.maxReplayBytes = maxReplayBytes
        self.clock = clock
    }

    /// Now by `clock` (`PublishClock.now`), read without a reference counted on the clock: a
    /// locked instruction each, on the path of every published value.
    var now: Int64 { Self.now(by: clock) }

    /// `clock.now()`, the clock opened and borrowed: called on the existential, the clock is
    /// retained for the call.
    private static func now(by clock: some PublishClock) -> Int64 {
        Unmanaged.passUnretained(clock)._withUnsafeGuaranteedRef { $0.now() }
    }

    /// `entry` keeps its values for a time only: `dropExpired()` ages them.
    func age(_ entry: SubjectEntry) { ageing[ObjectIdentifier(entry)] = entry }
    func stopAgeing(_ entry: SubjectEntry) { ageing[ObjectIdentifier(entry)] = nil }

    /// Lets go of every value older than its subject's `retain_s` (the server's sweep, once a
    /// second; and a subject's own before a subscriber is replayed it).
    func dropExpired() {
        guard !ageing.isEmpty else { return }
        let now = self.now
        for entry in ageing.values { entry.dropExpired(now: now) }
    }

    /// What a value weighs in a subject's history: its JSON text.
    static let weight: @Sendable (Message) -> Int = { $0.value.raw.buffer.count }

    /// `limit` when keeping `value` too would take the retained bytes past `maxBytes`. The
    /// check is made before the subject drops an older value for it, so a full server refuses
    /// values for retaining subjects until subjects are deleted or the limit is raised, the
    /// way Redis's `maxmemory` with `noeviction` refuses writes.
    func checkRoom(for value: RawJSON, in subject: String) throws(ProtocolError) {
        let count = value.buffer.count
        guard bytes + count > maxBytes else { return }
        throw ProtocolError(
            .limit,
            "subject '\(subject)' keeps its values, and the subjects keep \(bytes) bytes of values: "
                + "\(count) more would pass max_retained_bytes (\(maxBytes))")
    }

    /// A subject's retained bytes changed by `delta`.
    func add(_ delta: Int) {
        bytes += delta
        assert(bytes >= 0, "retained bytes went negative")
    }
}
