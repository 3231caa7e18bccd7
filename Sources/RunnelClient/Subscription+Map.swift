import RunnelJSON

/// A map subject's events (version 1.3): the table a `MapSubscription` keeps (`state.table`),
/// updated as the reader thread reads them, and the position of a snapshot, which becomes the
/// subscription's at `synced`.
extension Subscription {
    /// The table now (empty for a plain subscription).
    var table: [String: JSONValue] { state.withLock { $0.table?.entries ?? [:] } }

    /// Whether the table is complete and current.
    var isSynced: Bool { state.withLock { $0.table?.isSynced ?? false } }

    /// Returns once the table is synced (at once when it is), or the subscription has ended
    /// without an error; throws the error that ended it first, or `timeout` past `timeout`
    /// (default: `ClientOptions.callTimeout`).
    func waitSynced(timeout: Duration?) async throws(RunnelError) {
        let deadline = CallDeadline(op: "sub \(subject)", timeout: timeout ?? client.options.callTimeout)
        let notSynced = RunnelError(
            code: "timeout", message: "sub \(subject): not synced within \(deadline.timeout.secondsText) s")
        let id = state.withLock { $0.table?.takeWaiterID() ?? 0 }
        let timer = deadline.whenPassed { [weak self] in
            let waiter = self?.state.withLock { $0.table?.syncWaiters.removeValue(forKey: id) }
            waiter?.resume(returning: notSynced)
        }
        defer { timer.cancel() }
        let failure = await withCheckedContinuation { (waiter: CheckedContinuation<RunnelError?, Never>) in
            let now = state.withLock { state -> RunnelError?? in
                if state.table?.isSynced != false { return .some(nil) }
                if state.hasEnded { return .some(state.endError) }
                if deadline.hasPassed { return .some(notSynced) }
                state.table?.syncWaiters[id] = waiter
                return nil
            }
            if let now { waiter.resume(returning: now) }
        }
        if let failure { throw failure }
    }

    /// The connection is lost: the table is no longer current.
    func lost() {
        state.withLock { $0.table?.lost() }
    }

    /// A keyed value, for a map subscription: written to its table (or to the snapshot built
    /// apart), and put when the table has changed. True when a consumer waits to be woken.
    func write(_ value: Value, in state: inout SubscriptionState) -> Bool {
        guard let key = value.key else { return false }
        _ = state.seen(subject, position: value.position, keyed: true)
        guard let change = state.table?.write(value, key: key) else { return false }
        return state.put(change, capacity: capacity)
    }

    /// A `removed` event: only a map subscription takes it (from its table, or from the snapshot
    /// built apart) and yields it.
    func removed(_ line: ServerLine) -> Bool {
        guard let key = line.key else { return false }
        let reason = Removed.Reason(rawValue: line.reason ?? "")
        let removed = Removed(key: key, reason: reason, subject: subject, position: line.pos, time: line.ts)
        return state.withLock { state in
            guard state.table != nil else { return false }
            _ = state.seen(subject, position: line.pos, keyed: true)
            guard let change = state.table?.remove(removed) else { return false }
            return state.put(change, capacity: capacity)
        }
    }

    /// `synced`: the snapshot's position becomes the subscription's; a map subscription's table
    /// built apart is swapped in, its differences put, then `synced`, and the tasks waiting for
    /// it resumed.
    func synced(_ line: ServerLine) -> Bool {
        let (waiting, syncWaiters) = state.withLock { state in
            state.synced(subject, position: line.pos)
            guard let changes = state.table?.synced(subject: subject) else {
                return (false, [CheckedContinuation<RunnelError?, Never>]())
            }
            var waiting = false
            for change in changes where state.put(change, capacity: capacity) { waiting = true }
            return (waiting, state.table?.takeSyncWaiters() ?? [])
        }
        for waiter in syncWaiters { waiter.resume(returning: nil) }
        return waiting
    }
}
