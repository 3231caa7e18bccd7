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
    /// While a thread delivers, the entry is only marked to go (`SubjectCore.leaving`, and
    /// `DeliveryState.leaving`, which makes the delivering thread's compare-and-swap to idle
    /// fail): the delivering thread takes out every marked entry in one pass when it goes idle
    /// (`takeOutLeaving`). Entries ended one by one while a value fans out (a publish that
    /// ends thousands of its subscriptions) then cost one pass, where removing each from the
    /// array moved the ones after it: n² / 2 moves, and a copy of the list for the first.
    /// A marked entry is still in the list, disposed, so it receives nothing more.
    func remove(_ subscription: SubjectSubscription) {
        let removed = lock.withLock { () -> AnyObject? in
            guard let id = subscription.entry else { return nil }
            subscription.entry = nil
            // Under the lock, only the delivering thread changes the state, and only from
            // exactly `delivering` to `idle`: a failed exchange means it went idle.
            var state = delivery.load(ordering: .acquiring)
            while state & DeliveryState.delivering != 0 {
                let (exchanged, original) = delivery.compareExchange(
                    expected: state, desired: state | DeliveryState.leaving, ordering: .acquiringAndReleasing)
                if exchanged {
                    core.pointee.leaving.append(id)
                    return nil
                }
                state = original
            }
            guard let index = Self.index(of: id, in: core.pointee.entries) else { return nil }
            return core.pointee.entries.remove(at: index)
        }
        _ = removed
    }

    /// Takes the entries marked to go out of the list in one pass and returns them, to be
    /// released once the lock is dropped (lock held, by the thread that was delivering).
    func takeOutLeaving() -> ContiguousArray<AnyObject> {
        guard !core.pointee.leaving.isEmpty else { return [] }
        let leaving = Set(core.pointee.leaving)
        core.pointee.leaving = []
        var kept = ContiguousArray<AnyObject>()
        var removed = ContiguousArray<AnyObject>()
        kept.reserveCapacity(core.pointee.entries.count - min(leaving.count, core.pointee.entries.count))
        for entry in core.pointee.entries {
            if leaving.contains(ObjectIdentifier(entry)) {
                removed.append(entry)
            } else {
                kept.append(entry)
            }
        }
        core.pointee.entries = kept
        return removed
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

    /// Empties the list (the subject's deinit), releasing the entries outside the lock.
    func removeAll() {
        let entries = lock.withLock { () -> ContiguousArray<AnyObject> in
            defer {
                core.pointee.entries = []
                core.pointee.leaving = []
            }
            return core.pointee.entries
        }
        _ = entries
    }
}
