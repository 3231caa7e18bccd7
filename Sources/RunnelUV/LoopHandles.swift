import Synchronization

/// The handle owners of one loop (timers, signal watchers, listeners, connections): the open
/// ones, so that a shutdown can close them all, and counts of the live ones and the armed
/// timers, for tests and `stats`.
///
/// Thread rules: `register`, `unregister` and `allOpen` on the loop thread; the counters
/// from any thread. Made and owned by the loop's `LoopScheduler`.
final class LoopHandles: @unchecked Sendable {
    /// Every open handle owner (loop thread).
    private var owners: [ObjectIdentifier: any HandleOwner] = [:]
    private let armedTimers = Atomic<Int>(0)
    private let liveOwners = Atomic<Int>(0)

    func register(_ owner: any HandleOwner) { owners[ObjectIdentifier(owner)] = owner }
    func unregister(_ owner: any HandleOwner) { owners[ObjectIdentifier(owner)] = nil }

    /// Every open handle owner, closed by a shutdown (loop thread).
    var allOpen: [any HandleOwner] { Array(owners.values) }

    /// Owners now alive, open or not (any thread).
    var liveCount: Int { liveOwners.load(ordering: .relaxed) }
    func ownerCreated() { liveOwners.add(1, ordering: .relaxed) }
    func ownerDestroyed() { liveOwners.subtract(1, ordering: .relaxed) }

    /// Timer handles now armed (any thread).
    var armedTimerCount: Int { armedTimers.load(ordering: .relaxed) }
    func timerArmed() { armedTimers.add(1, ordering: .relaxed) }
    func timerDisarmed() { armedTimers.subtract(1, ordering: .relaxed) }
}
