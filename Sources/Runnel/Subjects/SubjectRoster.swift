import Synchronization

/// A subject's lock and per-value state, kept apart from the subject itself.
///
/// Each subscription (`SubjectSubscription`) holds the roster, not the subject: a weak
/// reference to the subject would give it a side table, making every retain and release of
/// it (one of each per publish) take the runtime's slow path, and a strong one would keep a
/// dropped subject alive. The subject empties the roster when it is deinitialised, which
/// releases subscribers that nothing else holds.
///
/// Thread rules: for a subject shared between threads (`SubjectThreading.shared`), everything
/// here is reached under the lock (but for the one exception of the delivery state), and the
/// sections under it never call out: subscribers are released after it is dropped. For a
/// subject confined to one thread (`.confined`) there is no lock, and the delivery state is a
/// plain integer: one thread at a time, handed on only with a happens-before edge (made on a
/// thread that then starts the one using it, say); the thread sanitizer reports any other use,
/// as every access is then plain memory.
final class SubjectRoster: @unchecked Sendable {
    /// nil for a confined subject.
    private let mutex: Lock?
    let core: UnsafeMutablePointer<SubjectCore>
    /// A shared subject's delivery state: whether a thread is delivering, and how many jobs
    /// wait for it (see `DeliveryState`). Changed under the lock, except by the delivering
    /// thread going idle with nothing queued: one compare-and-swap from `delivering` to
    /// `idle`, which fails once a job is queued. A confined subject's is `core.delivery`.
    private let delivery = Atomic<Int>(DeliveryState.idle)

    init(threading: SubjectThreading) {
        mutex = threading == .shared ? Lock() : nil
        core = .allocate(capacity: 1)
        core.initialize(to: SubjectCore())
    }

    deinit {
        core.deinitialize(count: 1)
        core.deallocate()
    }

    /// Whether the subject is confined to one thread at a time (it then has no lock).
    @inline(__always)
    var isConfined: Bool { mutex == nil }

    // MARK: The lock

    /// Takes the lock (a shared subject's; a confined one has none).
    @inline(__always)
    func lock() { mutex?.lock() }

    @inline(__always)
    func unlock() { mutex?.unlock() }

    @inline(__always)
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    // MARK: The delivery state

    /// The delivery state (acquiring).
    @inline(__always)
    var deliveryState: Int {
        isConfined ? core.pointee.delivery : delivery.load(ordering: .acquiring)
    }

    /// Sets the delivery state (lock held): `delivering` when a thread starts delivering to an
    /// idle subject, `idle` when the delivering thread stops with nothing queued.
    @inline(__always)
    func setDeliveryState(_ state: Int) {
        if isConfined {
            core.pointee.delivery = state
        } else {
            delivery.store(state, ordering: .releasing)
        }
    }

    /// The delivering thread goes idle unless a job was queued or an entry marked to go
    /// meanwhile: returns whether it did. Without the lock.
    @inline(__always)
    func finishDeliveringIfNothingWaits() -> Bool {
        guard !isConfined else {
            guard core.pointee.delivery == DeliveryState.delivering else { return false }
            core.pointee.delivery = DeliveryState.idle
            return true
        }
        return delivery.compareExchange(
            expected: DeliveryState.delivering, desired: DeliveryState.idle, ordering: .acquiringAndReleasing
        ).exchanged
    }

    /// Counts a job just queued (lock held). Returns whether the caller must drain: no thread
    /// was delivering, or the delivering one went idle before it saw the job.
    func jobQueued() -> Bool {
        let before: Int
        if isConfined {
            before = core.pointee.delivery
            core.pointee.delivery += DeliveryState.job
        } else {
            before = delivery.add(DeliveryState.job, ordering: .acquiringAndReleasing).oldValue
        }
        guard before & DeliveryState.delivering == 0 else { return false }
        if isConfined {
            core.pointee.delivery += DeliveryState.delivering
        } else {
            delivery.add(DeliveryState.delivering, ordering: .relaxed)
        }
        return true
    }

    /// Counts a queued job taken by the delivering thread (lock held).
    @inline(__always)
    func jobTaken() {
        if isConfined {
            core.pointee.delivery -= DeliveryState.job
        } else {
            delivery.subtract(DeliveryState.job, ordering: .relaxed)
        }
    }

    /// While a thread delivers, marks that entries wait to be taken out when it stops and
    /// returns true; false when no thread delivers (lock held).
    private func markLeavingIfDelivering() -> Bool {
        guard !isConfined else {
            guard core.pointee.delivery & DeliveryState.delivering != 0 else { return false }
            core.pointee.delivery |= DeliveryState.leaving
            return true
        }
        // Under the lock, only the delivering thread changes the state, and only from
        // exactly `delivering` to `idle`: a failed exchange means it went idle.
        var state = delivery.load(ordering: .acquiring)
        while state & DeliveryState.delivering != 0 {
            let (exchanged, original) = delivery.compareExchange(
                expected: state, desired: state | DeliveryState.leaving, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            state = original
        }
        return false
    }

    // MARK: The entries

    /// Takes out the entry of `subscription`, if it was listed, releasing it outside the lock.
    /// While a thread delivers, the entry is only marked to go (`SubjectCore.leaving`, and
    /// `DeliveryState.leaving`, which makes the delivering thread's step to idle fail): the
    /// delivering thread takes out every marked entry in one pass when it goes idle
    /// (`takeOutLeaving`). Entries ended one by one while a value fans out (a publish that
    /// ends thousands of its subscriptions) then cost one pass, where removing each from the
    /// array moved the ones after it: n² / 2 moves, and a copy of the list for the first.
    /// A marked entry is still in the list, disposed, so it receives nothing more.
    func remove(_ subscription: SubjectSubscription) {
        let removed = withLock { () -> AnyObject? in
            guard let id = subscription.entry else { return nil }
            subscription.entry = nil
            if markLeavingIfDelivering() {
                core.pointee.leaving.append(id)
                return nil
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
        let entries = withLock { () -> ContiguousArray<AnyObject> in
            defer {
                core.pointee.entries = []
                core.pointee.leaving = []
            }
            return core.pointee.entries
        }
        _ = entries
    }
}
