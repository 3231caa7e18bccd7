/// Work waiting for a virtual clock, in the order it falls due, first scheduled first among
/// equal times: `TestScheduler`'s and `CatchUpScheduler`'s queue, each with the `Handle` the
/// scheduler returned for it. Not thread-safe; its owner guards it.
struct DueQueue<Handle: Disposable> {
    struct Item {
        let due: SchedulerTime
        let sequence: UInt64
        /// What the scheduler returned for it: disposed, the work is not run.
        let handle: Handle
        let action: @Sendable () -> Void
    }

    private var nextSequence: UInt64 = 0
    /// Sorted by (due, sequence).
    private(set) var items: [Item] = []

    /// The next item's sequence, which `insert` will give it (for a handle that removes it).
    var upcomingSequence: UInt64 { nextSequence }

    /// Queues `action` at `due`, after everything due at or before then.
    mutating func insert(at due: SchedulerTime, handle: Handle, _ action: @escaping @Sendable () -> Void) {
        let item = Item(due: due, sequence: nextSequence, handle: handle, action: action)
        nextSequence += 1
        var low = 0
        var high = items.count
        while low < high {
            let mid = (low + high) / 2
            if items[mid].due <= due { low = mid + 1 } else { high = mid }
        }
        items.insert(item, at: low)
    }

    /// Takes out the first item not disposed, when it is due at or before `limit` (any, when
    /// nil).
    mutating func removeFirst(notAfter limit: SchedulerTime?) -> Item? {
        while let first = items.first, first.handle.isDisposed { items.removeFirst() }
        guard let first = items.first, limit.map({ first.due <= $0 }) ?? true else { return nil }
        return items.removeFirst()
    }

    mutating func remove(sequence: UInt64) { items.removeAll { $0.sequence == sequence } }

    /// Takes out everything.
    mutating func removeAll() -> [Item] {
        defer { items = [] }
        return items
    }
}

extension Scheduler {
    /// `after(_:repeatingEvery:leeway:_:)` for a scheduler on a virtual clock: each run is
    /// scheduled through `after(_:_:)` when the one before runs, so the clock's owner decides
    /// when each comes.
    func afterRearming(
        _ time: SchedulerTime, every interval: Duration, _ action: @escaping @Sendable () -> Void
    ) -> Disposable {
        let serial = SerialDisposable()
        let step = max(interval, .nanoseconds(1))
        @Sendable func arm(_ due: SchedulerTime) {
            serial.inner = after(due) {
                action()
                arm(due.advanced(by: step))
            }
        }
        arm(time)
        return serial
    }
}
