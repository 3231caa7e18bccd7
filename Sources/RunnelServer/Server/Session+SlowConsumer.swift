import Runnel
import RunnelProtocol
import RunnelUV

/// The slow-consumer policy: what happens to an event that finds the connection's unsent
/// output over the soft limit (`soft_pending_bytes`, clamped to `max_pending_bytes`).
///
/// A connection is a slow consumer once its output passes the hard limit
/// (`max_pending_bytes`), or stays over the soft limit for longer than the grace
/// (`soft_pending_seconds`). Until then its events are written. Each event applies the policy
/// of the subject its value came from (`SubjectLabel.slowConsumer`, else `slow_consumer`):
/// - `disconnect`: over the soft limit, the publisher whose value it is is paused while the
///   connection drains (`SlowConsumerLag.holdWhileDraining`), so a burst costs nobody; a
///   slow consumer gets a `closing` line and is closed;
/// - `drop`: a slow consumer's events are dropped (and counted in `dropped` events) until its
///   output is back under the soft limit;
/// - `backpressure`: over the soft limit, the publisher whose value it is (`context.pauses.current`)
///   is paused until this connection's output is back under the soft limit, or it is closed;
///   a slow consumer is closed as under `disconnect`, so a dead client stalls nobody for longer
///   than the grace;
/// - `conflate` (or a subscription made with `"conflate": true`): over the soft limit, the
///   value waits, replacing the one that waited (`Session+Conflation`).
///
/// When the grace ends (a timer, since a paused publisher may mean nothing more is written),
/// the connection is closed if any event of the lag was under `disconnect` or `backpressure`;
/// else, when values were conflated, if its client acknowledged nothing of its output during
/// the grace (one that did gets another grace).
/// Loop thread only.
extension Session {
    /// An event that found the output over the soft limit: written while the connection is
    /// not a slow consumer (pausing its publisher under `backpressure`, or `disconnect` while it
    /// drains), else the policy.
    /// Written through the transport as a `SessionTransport`: the delivery path keeps no
    /// more alive for this call than it must.
    @inline(never)
    func deliverOverSoftLimit(_ message: Message, to subscription: SessionSubscription) {
        let policy = message.label.slowConsumer ?? settings.config.slowConsumer
        let hardLimit = settings.config.maxPendingBytes
        let begins = lag == nil
        let lag = self.lag ?? startLag()
        // The end of the lag is awaited last: nothing here may see it end.
        defer { if begins && !isClosing { awaitOutputDrain() } }
        if subscription.conflates || policy == .conflate { return conflate(message, into: subscription, during: lag) }
        // A map subscription's `synced` comes once whatever the output holds (`Session+MapDelivery`).
        if message.mark == .synced {
            writeWaiting(subscription)
            return writeSynced(message, subscription)
        }
        guard !lag.isPastGrace, !output.hasUnsentBytes(over: hardLimit) else {
            return actOnSlowConsumer(policy, subscription)
        }
        if policy != .drop { lag.closesPastGrace = true }
        if let publisher = context.pauses.current {
            switch policy {
            case .disconnect: holdWhileDraining(publisher, lag)
            case .backpressure: lag.hold(publisher)
            case .drop, .conflate: break
            }
        }
        writeWaiting(subscription)
        if writeNext(message, subscription, limit: hardLimit, transport) {
            stats.counts.delivered &+= 1
        } else {
            actOnSlowConsumer(policy, subscription)
        }
    }

    /// The policy, for `missed` events of a slow consumer (values its loop missed too:
    /// `Server.noteMissed`).
    func actOnSlowConsumer(_ policy: SlowConsumerPolicy, _ subscription: SessionSubscription, missed: UInt64 = 1) {
        switch policy {
        case .disconnect, .backpressure:
            closeAsSlowConsumer()
        case .drop, .conflate:
            subscription.noteDropped(missed)
            stats.counts.dropped &+= missed
        }
    }

    /// The output went over the soft limit: the grace starts.
    private func startLag() -> SlowConsumerLag {
        let lag = SlowConsumerLag(graceTimer: armGrace(), acknowledged: transport.acknowledgedBytes)
        beginLag(lag)
        return lag
    }

    /// The timer that ends a grace begun now; nil with no grace.
    private func armGrace() -> Disposable? {
        let grace = settings.config.softPendingSeconds
        guard grace > .zero else { return nil }
        let scheduler = context.scheduler
        return scheduler.after(scheduler.now.advanced(by: grace)) { [weak self] in self?.graceEnded() }
    }

    /// Pauses `publisher` while this connection drains, arming the look at its progress the
    /// lag asks for.
    private func holdWhileDraining(_ publisher: PublisherGate, _ lag: SlowConsumerLag) {
        guard lag.holdWhileDraining(publisher, sent: transport.sentBytes) else { return }
        armDrainCheck(lag, acknowledged: transport.acknowledgedBytes)
    }

    /// Arms the next look at the connection's progress, its client having acknowledged
    /// `acknowledged` now.
    private func armDrainCheck(_ lag: SlowConsumerLag, acknowledged: UInt64) {
        let scheduler = context.scheduler
        lag.drainCheckArmed(
            scheduler.after(scheduler.now.advanced(by: SlowConsumerLag.drainCheck)) { [weak self] in
                self?.drainCheckDue()
            }, acknowledged: acknowledged)
    }

    /// The look at the connection's progress is due (internal, so tests can stand in for the
    /// timer): the publishers held while it drains go if its client has acknowledged less than
    /// `SlowConsumerLag.drainProgress` since the last.
    func drainCheckDue() {
        guard !isClosing, let lag else { return }
        let acknowledged = transport.acknowledgedBytes
        if lag.drainChecked(acknowledged: acknowledged, sent: transport.sentBytes) {
            armDrainCheck(lag, acknowledged: acknowledged)
        }
    }

    /// The grace timer fired (internal, so tests can stand in for the timer).
    func graceEnded() {
        guard !isClosing, let lag else { return }
        lag.graceTimerFired()
        if !isOverSoftLimit {
            // Back under the soft limit, its wake-up not come yet: the lag is over, unless the
            // waiting values fill the output again, which begins another grace.
            guard !flushWaiting() else { return endLag() }
            return lag.graceRestarted(armGrace(), acknowledged: transport.acknowledgedBytes)
        }
        lag.passGrace()
        if lag.closesPastGrace { return closeAsSlowConsumer() }
        guard lag.conflates else { return }
        // Conflating, it is cut only when it read nothing in the grace; else another begins.
        // (What it acknowledged: the kernel may take nothing more for minutes from a reader
        // of a few kilobytes a second.)
        let acknowledged = transport.acknowledgedBytes
        guard acknowledged != lag.acknowledgedAtGraceStart else { return closeAsSlowConsumer() }
        lag.graceRestarted(armGrace(), acknowledged: acknowledged)
    }

    /// Asks the transport to call `outputDrained` once the output is at most the input limit
    /// (the soft limit, or less while replies wait for another loop: `inputLimit`): the one
    /// wake-up both the lag and held requests (`Session+Input`) wait for.
    func awaitOutputDrain() {
        output.whenUnsentBytes(fallTo: inputLimit) { [weak self] in self?.outputDrained() }
    }

    private func outputDrained() {
        guard !isClosing else { return }
        // A cork put in place meanwhile may hold more; the waiting values may fill it again.
        if isOverInputLimit || !flushWaiting() { return awaitOutputDrain() }
        endLag()
        resumeInput()
    }

    /// The policy `disconnect` (and `backpressure`'s end): one last line, then close.
    func closeAsSlowConsumer() {
        guard !isClosing else { return }
        stats.counts.slowConsumerDisconnects &+= 1
        context.logger.notice(
            "closing slow consumer",
            metadata: [
                "connection": "\(id)", "peer": "\(transport.peerDescription)", "unsent": "\(output.unsentBytes)",
            ])
        close(saying: ProtocolError(.slowConsumer, ""), flushingWithin: .seconds(2))
    }
}
