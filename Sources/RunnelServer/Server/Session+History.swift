import Runnel
import RunnelProtocol

/// History by time (version 1.3): a subscription that starts at a time (`since`) or ends at
/// one (`until`), by the publish times the store stamps on values (`Message.time`).
extension Session {
    /// `since` and `until` as `sub` gives them, checked against what they apply to: `since`
    /// names one replay or behavior subject and no `from`; `until` is not before `since`.
    func checkTimeBounds(_ request: SubscribeRequest, on entry: SubjectEntry?, from: Position?)
        throws(ProtocolError)
    {
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

    /// `source` from `since` on (the retained values published at or after it, then live ones)
    /// and until `until`: completed at the first value published after it, or when the
    /// server's clock passes it, whichever comes first.
    func timeBounded(_ source: Signal<Message>, since: Int64?, until: Int64?) -> Signal<Message> {
        var bounded = source
        // Times only grow along a subject (`PublishClock`): skipping the older ones leaves
        // exactly those at or after `since`.
        if let since { bounded = bounded.skip(while: { $0.time < since }) }
        guard let until else { return bounded }
        let wait = max(0, until - subjects.retained.clock.now())
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
