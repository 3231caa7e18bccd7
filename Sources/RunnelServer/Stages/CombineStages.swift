import Runnel
import RunnelProtocol

/// `combineLatestWith`, `zipWith`, `merge`, `concat`, `takeUntil`: the library's combining
/// operators with other subjects' signals, looked up when the chain is compiled.
extension StageCompiler {
    /// Arrays `[mine, theirs]` of the values' unchanged bytes, with this stream's subject.
    func combineLatestWith(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError)
        -> Signal<Message>
    {
        try stage.checkNoOtherArguments(["subject"])
        let other = try subjectSignal(try stage.subject(), for: stage)
        return signal.combineLatest(with: other).map(Self.pair)
    }

    /// Arrays `[mine, theirs]` of the values' unchanged bytes. Either side running more than
    /// `max_buffer_values` values ahead of the other (values the library's zip must hold) ends
    /// the subscription with "limit".
    func zipWith(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["subject"])
        let other = try subjectSignal(try stage.subject(), for: stage)
        let maxValues = limits.maxBufferValues
        let index = stage.index
        // Mine minus theirs: the library's zip holds that many of the side ahead.
        return countingHeld(by: stage, signal) { mine, lead in
            let theirs = other.try { _ in
                lead.count -= 1
                if -lead.count > maxValues { throw StageFailure.limit(stage: index) }
            }
            return mine.zip(with: theirs).map(Self.pair)
        }
    }

    /// One inner subscription per subject listed: more than `max_buffer_values` of them fail
    /// the `sub` with `limit` before any is looked up (or created).
    func merge(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["subjects"])
        let names = try stage.subjects()
        guard names.count <= limits.maxBufferValues else {
            throw ProtocolError(
                .limit, "merge of \(names.count) subjects, over max_buffer_values (\(limits.maxBufferValues))",
                stage: stage.index)
        }
        var signals = [signal]
        for name in names { signals.append(try subjectSignal(name, for: stage)) }
        return Signal.merge(signals)
    }

    func concat(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["subject"])
        return signal.concat(try subjectSignal(try stage.subject(), for: stage))
    }

    func takeUntil(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["subject"])
        return signal.take(until: try subjectSignal(try stage.subject(), for: stage))
    }

    @Sendable private static func pair(_ pair: (Message, Message)) -> Message {
        Message(madeFrom: pair.0, value: RawArray.of([pair.0.value, pair.1.value]))
    }
}
