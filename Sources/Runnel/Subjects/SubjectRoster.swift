import Synchronization

/// A subject's lock and per-value state, kept apart from the subject itself.
///
/// Each subscription (`SubjectSubscription`) holds the roster, not the subject: a weak
/// reference to the subject would give it a side table, making every retain and release of
/// it (one of each per publish) take the runtime's slow path, and a strong one would keep a
/// dropped subject alive. The subject empties the roster when it is deinitialised, which
/// releases subscribers that nothing else holds.
///
/// Thread-safe: everything here is reached under `lock` (but for the one exception of
/// `delivery`), and the sections under it never call out: subscribers are released after
/// it is dropped.
final class SubjectRoster: @unchecked Sendable {
    let lock = Lock()
    let core: UnsafeMutablePointer<SubjectCore>
    /// Whether a thread is delivering, and how many jobs wait for it (see `DeliveryState`).
    /// Changed under `lock`, except by the delivering thread going idle with nothing queued:
    /// one compare-and-swap from `delivering` to `idle`, which fails once a job is queued.
    let delivery = Atomic<Int>(DeliveryState.idle)

    init() {
        core = .allocate(capacity: 1)
        core.initialize(to: SubjectCore())
    }

    deinit {
        core.deinitialize(count: 1)
        core.deallocate()
    }

    /// Counts a job just queued (lock held). Returns whether the caller must drain: no thread
    /// was delivering, or the delivering one went idle before it saw the job.
    func jobQueued() -> Bool {
        let before = delivery.add(DeliveryState.job, ordering: .acquiringAndReleasing).oldValue
        guard before & DeliveryState.delivering == 0 else { return false }
        delivery.add(DeliveryState.delivering, ordering: .relaxed)
        return true
    }

    /// Takes out the entry of `subscription`, if it was listed, releasing it outside the lock.
    func remove(_ subscription: SubjectSubscription) {
        let removed = lock.withLock { () -> AnyObject? in
            guard let id = subscription.entry, let index = Self.index(of: id, in: core.pointee.entries) else {
                return nil
            }
            return core.pointee.entries.remove(at: index)
        }
        _ = removed
    }

    /// Where the entry `id` is in `entries`, looked for from both ends at once: the entries
    /// that go are most often the newest (a client's last `sub` undone) or the oldest (many
    /// subscriptions ended, in the order they are delivered to, by one value: searching from
    /// one end only made ending n of them cost n² / 2 comparisons).
    private static func index(of id: ObjectIdentifier, in entries: ContiguousArray<AnyObject>) -> Int? {
        var low = 0
        var high = entries.count - 1
        while low <= high {
            if ObjectIdentifier(entries[high]) == id { return high }
            if ObjectIdentifier(entries[low]) == id { return low }
            low += 1
            high -= 1
        }
        return nil
    }

    /// Drops every subscriber, releasing them outside the lock.
    func removeAll() {
        let entries = lock.withLock { () -> ContiguousArray<AnyObject> in
            defer { core.pointee.entries = [] }
            return core.pointee.entries
        }
        _ = entries
    }
}
