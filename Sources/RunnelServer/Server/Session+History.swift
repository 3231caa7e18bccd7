import Runnel
import RunnelProtocol

/// History by time (version 1.3): a subscription that starts at a time (`since`) or ends at
/// one (`until`), by the publish times the store stamps on values (`Message.time`). The time
/// stages of a `since` subscription run in the values' own time while it replays (a
/// `CatchUpScheduler` on the loop's clock, advanced by each value's time as it enters the
/// chain), then in the loop's: what they give is what a subscription made at `since` would
/// have given live.
extension Session {
    /// `since` and `until` as `sub` gives them, checked against what they apply to: `since`
    /// names one replay or behavior subject and no `from`; `until` is not before `since`.
    func checkTimeBounds(_ request: SubscribeRequest, on entry: SubjectEntry?, from: Position?)
        throws(ProtocolError)
    {
        if entry?.map != nil && (request.since != nil || request.until != nil) {
            throw ProtocolError(
                .badRequest,
                "fields 'since' and 'until' do not apply to a map: its history is its changes, resumed with 'from'")
        }
        if let since = request.since {
            guard from == nil else {
                throw ProtocolError(.badRequest, "fields 'since' and 'from' cannot be given together")
            }
            guard let entry, entry.retainsValues else {
                let what = entry.map { "a \($0.kind.rawValue) subject" } ?? "a pattern"
                throw ProtocolError(
                    .badRequest, "field 'since' applies to a replay or behavior subject, not to \(what)")
            }
            if let until = request.until, until < since {
                throw ProtocolError(.badRequest, "field 'until' must not be before 'since'")
            }
        }
    }

    /// What a `since` subscription's time stages run on: catching up from `since`, the values'
    /// times put on the loop's clock by the offset between the two clocks at `now` (the
    /// server's clock, read just before).
    func catchUp(since: Int64, now: Int64) -> CatchUp {
        let mapping = CatchUp.Mapping(wallStart: now, loopStart: context.scheduler.now)
        return CatchUp(
            scheduler: CatchUpScheduler(live: context.scheduler, start: mapping.loopTime(of: since)), mapping: mapping)
    }

    /// `source` from `since` on (the retained values published at or after it, then live ones)
    /// and until `until`: completed at the first value published after it, or when the
    /// server's clock (`now` at the subscribe) passes it, whichever comes first. `catchUp` is
    /// advanced to each value's time before the value goes on.
    func timeBounded(
        _ source: Signal<Message>, since: Int64?, until: Int64?, now: Int64, catchingUp catchUp: CatchUp?
    ) -> Signal<Message> {
        var bounded = source
        // Times only grow along a subject (`PublishClock`): skipping the older ones leaves
        // exactly those at or after `since`.
        if let since { bounded = bounded.skip(while: { $0.time < since }) }
        if let catchUp {
            // The replay waits for the whole chain to subscribe, as a chain made at `since`
            // would have been before any value (`sample`'s ticks, say, start at `since`): its
            // subscription runs on the virtual clock, when `goLive` catches up.
            bounded = bounded.subscribe(on: catchUp.scheduler).doNext { message in
                guard !catchUp.scheduler.isLive else { return }
                catchUp.scheduler.advance(to: catchUp.mapping.loopTime(of: message.time))
            }
        }
        guard let until else { return bounded }
        let wait = max(0, until - now)
        let scheduler = context.scheduler
        let passed = Signal<Void>.create { subscriber in
            scheduler.after(delay: .milliseconds(wait)) {
                subscriber.sendNext(())
                subscriber.sendCompleted()
            }
        }
        // A value made from none (time 0) is not after `until`.
        return bounded.take(while: { $0.time <= until }).take(until: passed)
    }
}

/// A `since` subscription's scheduler for its time stages, and how its values' times map onto
/// the loop's clock. Thread rules: a value, used on the loop thread.
struct CatchUp: Sendable {
    /// The two clocks at one moment: a time in Unix ms is that far from `wallStart` on the loop.
    struct Mapping: Sendable {
        let wallStart: Int64
        let loopStart: SchedulerTime

        func loopTime(of time: Int64) -> SchedulerTime { loopStart.advanced(by: .milliseconds(time - wallStart)) }
    }

    let scheduler: CatchUpScheduler
    let mapping: Mapping
}
