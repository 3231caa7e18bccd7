import RunnelProtocol

/// Conflation (version 1.3): a subscription made with `"conflate": true`, or fed by a subject
/// whose policy is `conflate` (its own `slow_consumer`, else the global one), keeps at most one
/// value waiting (on a map, one per key: `WaitingValues`) while the connection's unsent output
/// is over the soft limit: a newer value replaces the waiting one, and counts it in `dropped`. Once the output falls, the waiting
/// values go out in the order their subscriptions began to wait, each after a `dropped`
/// event counting the values it replaced, for as long as the output stays under the soft
/// limit. Values are never reordered (while one waits, every newer one waits too), and a
/// terminal event writes the waiting value first. No publisher is paused: a conflating
/// subscriber costs its publishers nothing, and the server one value per subscription. A
/// connection that stays over the soft limit reading nothing for the grace
/// (`soft_pending_seconds`) is cut (`Session+SlowConsumer`); one that reads never is.
///
/// Thread rules: loop thread only, as the rest of the session.
extension Session {
    /// Keeps `message` as `subscription`'s one waiting value, replacing (and counting) the
    /// one that waited. Called over the soft limit, with `lag` begun.
    func conflate(_ message: Message, into subscription: SessionSubscription, during lag: SlowConsumerLag) {
        lag.conflates = true
        if subscription.waiting.keep(message) {
            subscription.noteDropped(1)
            stats.counts.dropped &+= 1
        } else if !subscription.isQueuedToFlush {
            subscription.isQueuedToFlush = true
            waitingToFlush.append(subscription)
        }
    }

    /// Writes what `subscription` owes before its next event, whatever the output holds: the
    /// count of the values it dropped or replaced, then its waiting values (one, or one per key).
    func writeWaiting(_ subscription: SessionSubscription) {
        if subscription.dropped > 0 { writeDropped(subscription) }
        guard !subscription.waiting.isEmpty else { return }
        for message in subscription.waiting.takeAll() where writeNext(message, subscription, limit: .max, transport) {
            stats.counts.delivered &+= 1
        }
    }

    /// The output fell below the soft limit: writes the waiting values in the order their
    /// subscriptions began to wait, while it stays there. False when it went over again with
    /// some still waiting, which keep their places.
    func flushWaiting() -> Bool {
        var flushed = 0
        defer { waitingToFlush.removeFirst(flushed) }
        for subscription in waitingToFlush {
            guard !isOverSoftLimit else { return false }
            subscription.isQueuedToFlush = false
            flushed += 1
            if !subscription.isFinished { writeWaiting(subscription) }
        }
        return true
    }
}
