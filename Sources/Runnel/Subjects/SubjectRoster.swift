/// A subject's lock and per-value state, kept apart from the subject itself.
///
/// Each subscription's removal action holds the roster, not the subject: a weak reference to
/// the subject would give it a side table, making every retain and release of it (one of each
/// per publish) take the runtime's slow path, and a strong one would keep a dropped subject
/// alive. The subject empties the roster when it is deinitialised, which releases subscribers
/// that nothing else holds. Thread-safe: everything here is reached under `lock`.
final class SubjectRoster: @unchecked Sendable {
    let lock = Lock()
    let core: UnsafeMutablePointer<SubjectCore>

    init() {
        core = .allocate(capacity: 1)
        core.initialize(to: SubjectCore())
    }

    deinit {
        core.deinitialize(count: 1)
        core.deallocate()
    }

    /// Takes out the subscriber whose passthrough is `id`.
    func remove(_ id: ObjectIdentifier) {
        lock.withLock {
            if let index = core.pointee.entries.lastIndex(where: { ObjectIdentifier($0) == id }) {
                core.pointee.entries.remove(at: index)
            }
        }
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
